"""End to end: files a Telegram user sends reach the model. The whole daemon built from
settings behind the Telegram channel, the real python-telegram-bot against the loopback Bot
API fake (``getFile`` and its file URL included) and an OpenAI-compatible model on loopback
whose requests are read back: a photo arrives as an ``image_url`` data URL, a CSV's text and
a PDF's text inline, marked as data from outside; a file over ``attachments.max_bytes``, or
over what the Bot API lets a bot download, gets the line saying so, is never downloaded, and
the user is still answered. The ``send_file`` tool posts a photo and a document."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.app import App
from bot.attachments.lines import SMALLER
from bot.config import Settings, parse_settings
from bot.tools.builtin.scopes import scope_folder
from bot.untrusted import CLOSE_TAG, OPEN_TAG
from tests.attachments.images import png
from tests.attachments.pdfs import text_pdf
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.telegram_server import JSON, FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, started

pytestmark = pytest.mark.usefixtures("telegram_env")

KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
CSV = b"region,revenue\nnorth,1200\nsouth,950\n"
MB = 1024 * 1024


def settings_for(
    tg: FakeTelegram, llm: OpenAIFake | None, tmp_path: Path, **attachments: Any
) -> Settings:
    """The daemon's settings: the Telegram channel, ``attachments``, and the model at
    ``llm`` (None: the test gives the App its provider)."""
    providers: dict[str, Any] = {}
    if llm is not None:
        providers["default"] = {
            "kind": "openai",
            "base_url": llm.base_url,
            "model": "gpt-4o",  # a model that reads images
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0},
            "attachments": attachments,
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "allowed_users": [str(REQUESTER)],
                    }
                }
            },
            "providers": providers,
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
        require_provider=llm is not None,
    )


@pytest.fixture
async def llm(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIFake]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key-000")
    async with OpenAIFake() as server:
        yield server


def document(file_id: str, name: str, mime: str, size: int) -> JSON:
    return {
        "file_id": file_id,
        "file_unique_id": "u" + file_id,
        "file_name": name,
        "mime_type": mime,
        "file_size": size,
    }


def photo_sizes(file_id: str, width: int, height: int, size: int) -> list[JSON]:
    """What Telegram sends for a photo: a thumbnail and the full size."""
    return [
        {"file_id": "thumb", "file_unique_id": "t", "width": 90, "height": 45, "file_size": 9},
        {
            "file_id": file_id,
            "file_unique_id": "u" + file_id,
            "width": width,
            "height": height,
            "file_size": size,
        },
    ]


async def asked_with(
    tg: FakeTelegram, llm: OpenAIFake, settings: Settings, media: list[JSON]
) -> list[JSON]:
    """The requester sends one DM per item of ``media`` (a message's extra fields, captioned
    "what does this say?"); the last user message of the model request each one made, once
    its answer reached the chat."""
    asked: list[JSON] = []
    async with App(settings) as app:
        await started(app)
        dm = private_chat(REQUESTER)
        for n, fields in enumerate(media, start=1):
            llm.queue_text(f"Read it, {n}.")
            payload = message(
                dm, user(REQUESTER), "", message_id=10 + n, caption="what does this say?", **fields
            )
            await tg.push({"message": payload})
            await tg.wait_for(
                "sendMessage", lambda c, n=n: f"Read it, {n}." in str(c.params.get("text"))
            )
            request = llm.requests[-1].body["messages"]
            asked.append([m for m in request if m["role"] == "user"][-1])
    return asked


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
    tg: FakeTelegram, llm: OpenAIFake, tmp_path: Path
) -> None:
    image = png(640, 480)
    pdf = text_pdf(["Quarterly revenue rose 12 percent"])
    tg.file_store.add("PH1", image, path="photos/file_1.jpg")
    tg.file_store.add("thumb", b"not this one", path="photos/file_0.jpg")
    tg.file_store.add("CSV1", CSV, path="documents/file_2.csv")
    tg.file_store.add("PDF1", pdf, path="documents/file_3.pdf")
    media = [
        {"photo": photo_sizes("PH1", 640, 480, len(image))},
        {"document": document("CSV1", "sales.csv", "text/csv", len(CSV))},
        {"document": document("PDF1", "report.pdf", "application/pdf", len(pdf))},
    ]
    photo_turn, csv_turn, pdf_turn = await asked_with(
        tg, llm, settings_for(tg, llm, tmp_path), media
    )

    assert text_of(photo_turn).startswith("what does this say?")
    [url] = images_of(photo_turn)
    assert url.startswith("data:image/png;base64,")
    shown = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert shown.size == (640, 480)

    text = text_of(csv_turn)
    assert f'{OPEN_TAG} source="sales.csv">' in text
    assert text.index(OPEN_TAG) < text.index("north,1200") < text.index(CLOSE_TAG)
    assert images_of(csv_turn) == []

    text = text_of(pdf_turn)
    assert f'{OPEN_TAG} source="report.pdf">' in text
    assert text.index(OPEN_TAG) < text.index("Quarterly revenue rose 12 percent")
    assert tg.file_store.downloads == [
        "photos/file_1.jpg",
        "documents/file_2.csv",
        "documents/file_3.pdf",
    ]


@pytest.mark.parametrize(
    ("limits", "stated", "reason"),
    [
        ({"max_bytes": 1000}, True, "files over 1000 bytes are not accepted"),
        ({}, True, "files over 20 MB are not accepted"),
        # no size in the message: getFile tells, Telegram refuses a file over 20 MB
        ({}, False, "it is larger than the 20 MB Telegram lets bots download"),
    ],
    ids=["attachments.max_bytes", "stated over the Bot API's limit", "told by getFile"],
)
async def test_a_file_over_the_limit_gets_the_limit_line(
    tg: FakeTelegram,
    llm: OpenAIFake,
    tmp_path: Path,
    limits: dict[str, Any],
    stated: bool,
    reason: str,
) -> None:
    size = 8000 if limits else 25 * MB
    tg.file_store.add("BIG", b"x," * 4000, size=size)
    item = document("BIG", "dump.csv", "text/csv", size)
    if not stated:
        del item["file_size"]
    [turn] = await asked_with(
        tg, llm, settings_for(tg, llm, tmp_path, **limits), [{"document": item}]
    )
    text = text_of(turn)
    assert text.startswith("what does this say?\n\n[attachment dump.csv ")
    assert text.endswith(f" was not read: {reason}; {SMALLER}]")  # the file named once
    assert "x,x,x," not in text
    assert tg.file_store.downloads == []  # refused by its size, before any download
    assert len(tg.calls_of("getFile")) == (0 if stated else 1)
    answered = [m["text"] for m in tg.bot_messages(REQUESTER) if "text" in m]
    assert "Read it, 1." in answered


async def test_a_file_url_off_the_bot_api_server_is_not_fetched_and_the_model_is_told(
    tg: FakeTelegram, llm: OpenAIFake, tmp_path: Path
) -> None:
    tg.file_store.add("CSV2", CSV)
    tg.file_store.foreign_url = "http://localhost:9/documents/file_2.csv"
    item = document("CSV2", "sales.csv", "text/csv", len(CSV))
    [turn] = await asked_with(tg, llm, settings_for(tg, llm, tmp_path), [{"document": item}])
    text = text_of(turn)
    assert (
        "[attachment sales.csv (36 bytes) was not read: it was not downloaded: its address is"
        " not on the Bot API server" in text
    )
    assert text.count("sales.csv") == 1
    assert "north,1200" not in text and tg.file_store.downloads == []


async def test_the_send_file_tool_posts_a_photo_and_a_document(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """The model sends two workspace files to the conversation it answers (no approval):
    the picture arrives as a photo, the CSV as a document under the name given."""
    image = png(400, 300)
    folder = (
        tmp_path
        / "workspace"
        / scope_folder("conversation", channel="telegram.main", conversation_id=str(REQUESTER))
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
    settings = settings_for(tg, None, tmp_path)
    async with App(settings, provider=provider) as app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER), "send them", message_id=20)})
        await tg.wait_for("sendMessage", lambda c: "Both sent." in str(c.params.get("text")))
    [photo] = tg.calls_of("sendPhoto")
    assert photo.params["photo"] == {"file_name": "chart.png", "bytes": image}
    assert photo.params["caption"] == "The <b>chart</b>"
    [doc] = tg.calls_of("sendDocument")
    assert doc.params["document"] == {"file_name": "sales.csv", "bytes": CSV}
    assert {photo.params["chat_id"], doc.params["chat_id"]} == {REQUESTER}
