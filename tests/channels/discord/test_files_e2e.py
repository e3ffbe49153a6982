"""End to end: files a Discord user attaches reach the model. The whole daemon built from
settings behind the Discord channel, the real discord.py against the loopback fake (its CDN
included) and an OpenAI-compatible model on loopback whose requests are read back: a photo
arrives as an ``image_url`` data URL, a CSV's text and a PDF's text inline, marked as data
from outside; a file over ``attachments.max_bytes`` gets the line saying so; an attachment
whose signed URL expired is renewed on the way. The ``send_file`` tool posts workspace files
to the conversation as attachments."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.app import App
from bot.channel import HealthState
from bot.config import Settings, parse_settings
from bot.tools.builtin.scopes import scope_folder
from bot.untrusted import CLOSE_TAG, OPEN_TAG
from channels.discord.adapter import DiscordChannel
from tests.attachments.pdfs import text_pdf
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import ALICE, BOT, BOT_ID, GENERAL, said
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

pytestmark = pytest.mark.usefixtures("discord_env")

KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
CSV = b"region,revenue\nnorth,1200\nsouth,950\n"


def photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 40, 40)).save(out, format="PNG")
    return out.getvalue()


def settings_for(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path, **attachments: Any
) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0},
            "attachments": attachments,
            "channels": {
                "discord": {
                    "main": {
                        "api_base_url": fake.base_url,
                        "gateway_url": fake.gateway_url,
                        "guild_ready_timeout_s": 0.05,
                        "allowed_users": [ALICE["id"]],
                    }
                }
            },
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "gpt-4o",  # a model that reads images
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                    "tool_mode": "native",
                }
            },
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
    )


@pytest.fixture
async def llm(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIFake]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-000")
    async with OpenAIFake() as server:
        yield server


async def asked_with(
    fake: FakeDiscord, llm: OpenAIFake, settings: Settings, items: list[JSON]
) -> JSON:
    """Alice mentions the bot with ``items`` attached; the last user message the model was
    sent for it (the turn's answer is posted before this returns)."""
    llm.queue_text("Read them.")
    async with App(settings) as app:
        channel = app.channels["discord.main"]
        assert isinstance(channel, DiscordChannel)
        await wait_for_health(channel, HealthState.CONNECTED)
        message = said(fake, f"<@{BOT_ID}> what do these say?", mentions=[BOT], attachments=items)
        await fake.dispatch("MESSAGE_CREATE", message)
        await fake.wait_until(lambda: "Read them." in fake.posted(GENERAL), within=30)
    [request] = llm.requests
    user: JSON = [m for m in request.body["messages"] if m["role"] == "user"][-1]
    return user


def text_of(message: JSON) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part["type"] == "text")


def images_of(message: JSON) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return []
    return [part["image_url"]["url"] for part in content if part["type"] == "image_url"]


async def test_a_photo_a_csv_and_a_pdf_reach_the_model(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path
) -> None:
    image = photo()
    items = [
        fake.cdn.attachment(GENERAL, "chart.png", image, content_type="image/png"),
        fake.cdn.attachment(GENERAL, "sales.csv", CSV, content_type="text/csv"),
        fake.cdn.attachment(
            GENERAL,
            "report.pdf",
            text_pdf(["Quarterly revenue rose 12 percent"]),
            content_type="application/pdf",
        ),
    ]
    user = await asked_with(fake, llm, settings_for(fake, llm, tmp_path), items)
    text = text_of(user)
    assert "what do these say?" in text
    assert "chart.png" in text and "sales.csv" in text and "report.pdf" in text
    csv_at, pdf_at = text.index("north,1200"), text.index("Quarterly revenue rose 12 percent")
    # both inside the marking of outside data, each after its own opening tag
    opened = [i for i in range(len(text)) if text.startswith(OPEN_TAG, i)]
    assert len(opened) == 2 and opened[0] < csv_at < opened[1] < pdf_at
    assert text.count(CLOSE_TAG) == 2
    [url] = images_of(user)
    assert url.startswith("data:image/png;base64,")
    shown = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert shown.size == (64, 48)
    assert all(hit.status == 200 and hit.authorization is None for hit in fake.cdn.hits)


async def test_an_expired_attachment_is_renewed_and_read(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path
) -> None:
    item = fake.cdn.attachment(GENERAL, "sales.csv", CSV, content_type="text/csv", expired=True)
    user = await asked_with(fake, llm, settings_for(fake, llm, tmp_path), [item])
    assert "north,1200" in text_of(user)
    assert fake.calls_to("GET", rf"/channels/{GENERAL}/messages/\d+")


async def test_a_file_over_the_limit_gets_the_limit_line(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path
) -> None:
    big = b"x," * 4000
    item = fake.cdn.attachment(GENERAL, "dump.csv", big, content_type="text/csv")
    settings = settings_for(fake, llm, tmp_path, max_bytes=1000)
    user = await asked_with(fake, llm, settings, [item])
    text = text_of(user)
    assert "dump.csv" in text and "was not read" in text
    assert "x,x,x," not in text
    assert fake.cdn.hits == []  # refused by its stated size, before any download


async def test_a_foreign_attachment_is_not_fetched_and_the_model_is_told(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path
) -> None:
    item = fake.cdn.attachment(GENERAL, "x.csv", CSV, host="localhost")
    user = await asked_with(fake, llm, settings_for(fake, llm, tmp_path), [item])
    assert "x.csv" in text_of(user) and "not on Discord's own file servers" in text_of(user)
    assert fake.cdn.hits == []


async def test_the_send_file_tool_posts_workspace_files_as_attachments(
    fake: FakeDiscord, llm: OpenAIFake, tmp_path: Path
) -> None:
    """The model sends two workspace files to the conversation it answers (no approval):
    each arrives as a message attachment with its bytes, the caption rendered."""
    image = photo()
    folder = (
        tmp_path
        / "workspace"
        / scope_folder("conversation", channel="discord.main", conversation_id=GENERAL)
    )
    folder.mkdir(parents=True)
    (folder / "chart.png").write_bytes(image)
    (folder / "out.csv").write_bytes(CSV)
    provider = ScriptedProvider(
        [
            reply(
                "",
                call("send_file", {"path": "chart.png", "caption": "The **chart**"}),
                call("send_file", {"path": "out.csv", "name": "sales.csv"}),
            ),
            reply("Both sent."),
        ]
    )
    async with App(settings_for(fake, llm, tmp_path), provider=provider) as app:
        channel = app.channels["discord.main"]
        assert isinstance(channel, DiscordChannel)
        await wait_for_health(channel, HealthState.CONNECTED)
        request = said(fake, f"<@{BOT_ID}> send them", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", request)
        await fake.wait_until(lambda: "Both sent." in fake.posted(GENERAL), within=30)
    uploads = [c for c in fake.calls_to("POST", f"/channels/{GENERAL}/messages") if c.files]
    assert [c.files for c in uploads] == [{"chart.png": image}, {"sales.csv": CSV}]
    [chart, sales] = [c.body or {} for c in uploads]
    assert chart["content"] == "The **chart**" and not sales.get("content")
