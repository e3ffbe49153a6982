"""Files end to end on Slack: the whole daemon behind the Slack channel (slack-bolt and
slack_sdk against the fake Slack), the model an OpenAI-compatible fake.

A user shares a photo, a CSV and a PDF with one message: the turn downloads each with the
bot token, and the model's request carries the photo as an ``image_url`` data URL, the CSV's
text and the PDF's text marked as outside data. A file over ``attachments.max_bytes`` is not
downloaded at all (or, when its event understates its size, the download stops past the
limit); the model is told the limit, and the turn is answered. The ``send_file`` tool shares
workspace files in the thread it answers, through the external upload flow.
"""

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
from tests.attachments.pdfs import text_pdf
from tests.fakes.channel_health import wait_for_health
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.slack_server import BOT_USER, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import REF, REQUESTER, channel_values, slack_channel

KEY = "sk-slack-files-e2e"
CSV = b"when,what\n2024-01-01,deploy v2\n2024-01-02,rollback\n"


@pytest.fixture
async def llm() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


def settings_for(
    slack: FakeSlack, llm: OpenAIFake | None, tmp_path: Path, **attachments: Any
) -> Settings:
    """The daemon's settings: the Slack channel, ``attachments``, and the model at ``llm``
    (None: the test gives the App its provider)."""
    providers: dict[str, Any] = {}
    if llm is not None:
        providers["default"] = {
            "kind": "openai",
            "base_url": llm.base_url,
            "model": "gpt-4o",
            "api_key_env": "HATCHWAY_SLACK_FILES_KEY",
            "images": True,
            "max_retries": 0,
            "timeout_s": 30,
        }
    return parse_settings(
        {
            "state_dir": str(tmp_path / "state"),
            "attachments": attachments,
            "channels": {"slack": {"main": channel_values(slack)}},
            "providers": providers,
        },
        environ={"HATCHWAY_SLACK_FILES_KEY": KEY},
        require_provider=llm is not None,
    )


def photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def last_user_message(body: dict[str, Any]) -> tuple[str, list[str]]:
    """The text of the request's last user message and its image URLs."""
    (message,) = [m for m in body["messages"] if m["role"] == "user"][-1:]
    content = message["content"]
    if isinstance(content, str):
        return content, []
    text = "\n".join(p["text"] for p in content if p["type"] == "text")
    images = [p["image_url"]["url"] for p in content if p["type"] == "image_url"]
    return text, images


async def run_turn(slack: FakeSlack, app_settings: Settings, files: list[dict[str, Any]]) -> None:
    """One DM from the requester sharing ``files``, answered by the daemon."""
    channel = slack_channel(slack)
    async with App(app_settings, channels={str(REF): channel}):
        await wait_for_health(channel, HealthState.CONNECTED)
        event = message_event(
            f"<@{BOT_USER}> what do these say?",
            user=REQUESTER,
            channel="D0001",
            subtype="file_share",
            files=files,
        )
        await slack.push("events_api", event_callback(event))
        await slack.wait_for("chat.postMessage", where=lambda p: "Read them" in str(p.get("text")))


async def test_a_photo_a_csv_and_a_pdf_reach_the_model(
    slack: FakeSlack, llm: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHWAY_SLACK_FILES_KEY", KEY)
    llm.queue_text("Read them.")
    png = photo()
    files = [
        slack.files.share("shot.png", png, "image/png", redirect="same"),
        slack.files.share("changes.csv", CSV, "text/csv"),
        slack.files.share("spec.pdf", text_pdf(["The launch code is blue."]), "application/pdf"),
    ]
    await run_turn(slack, settings_for(slack, llm, tmp_path), files)

    (request,) = llm.requests
    text, images = last_user_message(request.body)
    assert "what do these say?" in text
    assert '<untrusted-data source="changes.csv">' in text
    assert '<untrusted-data source="spec.pdf">' in text
    assert "2024-01-02,rollback" in text
    assert "The launch code is blue." in text
    assert "shot.png" in text and "changes.csv" in text and "spec.pdf" in text
    (image,) = images
    assert image.startswith("data:image/png;base64,")
    shown = Image.open(io.BytesIO(base64.b64decode(image.split(",", 1)[1])))
    assert shown.size == (64, 48)
    # every file was fetched with the bot token, from the fake's own host only
    assert len(slack.files.requests) == 4  # the photo's redirect is one more hop
    assert slack.files.foreign_requests == []


async def test_a_file_over_the_limit_gets_the_limit_line(
    slack: FakeSlack, llm: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHWAY_SLACK_FILES_KEY", KEY)
    llm.queue_text("Read them.")
    files = [
        slack.files.share("dump.log", b"x" * 5000, "text/plain"),
        # its event understates its size: the download itself stops past the limit
        slack.files.share("trace.log", b"y" * 50_000, "text/plain", chunked=True, size=10),
        slack.files.share("changes.csv", CSV, "text/csv"),
    ]
    await run_turn(slack, settings_for(slack, llm, tmp_path, max_bytes=2000), files)

    (request,) = llm.requests
    text, _ = last_user_message(request.body)
    for name in ("dump.log", "trace.log"):
        (line,) = [ln for ln in text.splitlines() if name in ln]
        assert "not accepted" in line and "2 KB" in line
    assert "y" * 100 not in text
    assert "2024-01-02,rollback" in text
    fetched = [r.path.rsplit("/", 1)[-1] for r in slack.files.requests]
    assert sorted(fetched) == ["changes.csv", "trace.log"]  # dump.log never fetched


async def test_the_send_file_tool_shares_files_in_the_thread(
    slack: FakeSlack, tmp_path: Path
) -> None:
    """The model sends two workspace files to the conversation it answers (no approval):
    both arrive in the mention's thread with the right names and bytes."""
    png = photo()
    folder = (
        tmp_path
        / "state"
        / "workspace"
        / scope_folder("conversation", channel=str(REF), conversation_id="C0001")
    )
    folder.mkdir(parents=True)
    (folder / "chart.png").write_bytes(png)
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
    channel = slack_channel(slack)
    mention_ts = "1700000001.000200"
    async with App(
        settings_for(slack, None, tmp_path), provider=provider, channels={str(REF): channel}
    ):
        await wait_for_health(channel, HealthState.CONNECTED)
        mention = message_event(
            f"<@{BOT_USER}> send them", user=REQUESTER, kind="app_mention", ts=mention_ts
        )
        await slack.push("events_api", event_callback(mention))
        await slack.wait_for("chat.postMessage", where=lambda p: "Both sent." in str(p.get("text")))

    chart, sales = slack.files.uploads
    assert (chart.name, chart.data, chart.initial_comment) == ("chart.png", png, "The *chart*")
    assert (sales.name, sales.data, sales.initial_comment) == ("sales.csv", CSV, None)
    assert {(u.channel, u.thread_ts) for u in (chart, sales)} == {("C0001", mention_ts)}
    assert slack.calls_of("files.upload") == []
