"""Files users send, through the daemon: an App on a real SQLite file behind the in-process
file channel, and an OpenAI-compatible model on loopback whose requests are read back. A
photo goes to the model as an ``image_url`` with the turn it came with and never again (its
line stays in history); a CSV and a PDF arrive as text marked as data; an oversized file, a
failed download and a corrupt image become lines and the turn still runs; a text-only model
gets a line that says it is not shown the image; old attachments are deleted when the App starts."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from bot.app import App
from bot.attachments.lines import RESEND, SMALLER, SMALLER_IMAGE
from bot.attachments.retention import DAY_S
from bot.config import Settings, parse_settings
from bot.envelope import (
    Attachment,
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from bot.errors import AttachmentError
from bot.store import AttachmentKind, AttachmentRecord, Store
from bot.tools.builtin.scopes import scope_folder
from bot.untrusted import OPEN_TAG
from tests.attachments.images import bomb_png, encoded, png
from tests.attachments.pdfs import text_pdf
from tests.fakes.channel import FileChannel
from tests.fakes.openai_server import OpenAIFake

TELEGRAM = ChannelRef(kind="telegram", alias="main")
USER = "4242"
CHAT = "-100777"
KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
MB = 1024 * 1024
CSV = b"region,revenue\nnorth,1200\nsouth,950\n"
PHOTO = png(2000, 1000)


def settings_for(llm: OpenAIFake, tmp_path: Path, *, images: bool | None = None) -> Settings:
    provider: dict[str, Any] = {
        "kind": "openai",
        "base_url": llm.base_url,
        "model": "gpt-4o",
        "api_key_env": KEY_ENV,
        "max_retries": 0,
    }
    if images is not None:
        provider["images"] = images
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 60.0},
            "attachments": {"max_bytes": 2 * MB, "keep_days": 3},
            "channels": {"telegram": {"main": {"allowed_users": [USER]}}},
            "providers": {"default": provider},
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
    )


def message(n: int, *attachments: Attachment, text: str = "") -> IngressEnvelope:
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=str(n),
        conversation_id=CHAT,
        sender=Sender(id=USER, display_name="Ana"),
        text=text or f"question {n}",
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id=CHAT),
        attachments=attachments,
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(),
    )


def file(ref: str, name: str, kind: str = "file") -> Attachment:
    return Attachment(kind=kind, name=name, ref=ref)


@pytest.fixture
async def llm() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


@pytest.fixture
def channel() -> FileChannel:
    return FileChannel(
        TELEGRAM,
        {
            "photo": PHOTO,
            "csv": CSV,
            "pdf": text_pdf(["Invoice 2041", "Total 300 EUR"]),
            "big": b"x" * (3 * MB),
            "bad": png(50, 50)[:-40],
        },
    )


async def ask(app: App, llm: OpenAIFake, channel: FileChannel, envelope: IngressEnvelope) -> Any:
    """Deliver ``envelope``; the messages of the model request its turn made."""
    llm.queue_text(f"answer {envelope.message_id}")
    await app.gateway.deliver(envelope)
    await channel.wait_for(f"answer {envelope.message_id}")
    return llm.requests[-1].body["messages"]


def texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part["type"] == "text")


def image_urls(messages: list[dict[str, Any]]) -> list[str]:
    return [
        part["image_url"]["url"]
        for m in messages
        if isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]


async def test_photo_csv_and_pdf_reach_the_model_and_the_photo_only_once(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        first = await ask(
            app,
            llm,
            channel,
            message(
                1,
                file("photo", "", kind="image"),
                file("csv", "revenue.csv"),
                file("pdf", "invoice.pdf"),
                text="what do these say?",
            ),
        )
        second = await ask(app, llm, channel, message(2, text="and the total?"))
        records = await app.store.attachments.of_session(f"telegram.main:{CHAT}")
    user = first[-1]
    assert user["role"] == "user"
    content = texts(user["content"])
    assert content.startswith("what do these say?\n\n[image image-1 (attachment ")
    assert f'{OPEN_TAG} source="revenue.csv">' in content and "north,1200" in content
    assert f'{OPEN_TAG} source="invoice.pdf">' in content and "Total 300 EUR" in content
    [url] = image_urls(first)
    assert url.startswith("data:image/png;base64,")
    assert len(base64.b64decode(url.split(",", 1)[1])) < len(PHOTO)  # resized down
    # the next turn: the same lines in history, the image not sent again
    assert image_urls(second) == []
    assert next(texts(m["content"]) for m in second if m["role"] == "user") == content
    assert [r.kind for r in records] == [
        AttachmentKind.IMAGE,
        AttachmentKind.TEXT,
        AttachmentKind.PDF,
    ]
    folder = (
        tmp_path
        / "workspace"
        / scope_folder("conversation", channel=str(TELEGRAM), conversation_id=CHAT)
    )
    csv_copy = folder / "attachments" / f"{records[1].id}-revenue.csv"
    assert csv_copy.read_bytes() == CSV  # where file_read finds it
    assert f"saved in the workspace as attachments/{records[1].id}-revenue.csv" in content
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        bodies = [body for (body,) in db.execute("SELECT body FROM messages")]
    assert not any("base64" in body or "image_url" in body for body in bodies)


async def test_failures_are_lines_and_the_turn_runs(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    channel.failures["gone"] = AttachmentError("the file is no longer on Telegram's servers")
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        messages = await ask(
            app,
            llm,
            channel,
            message(1, file("big", "dump.sql"), file("gone", "old.txt"), file("bad", "s.png")),
        )
    content = texts(messages[-1]["content"])
    assert f"[attachment dump.sql was not read: files over 2 MB are not accepted; {SMALLER}]" in (
        content
    )
    assert (
        f"[attachment old.txt was not read: the file is no longer on Telegram's servers; {RESEND}]"
        in content
    )
    assert "could not be read: the image is corrupt or truncated" in content
    assert image_urls(messages) == []
    assert channel.texts[-1] == "answer 1"


async def test_a_text_only_model_gets_the_line_alone(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    settings = settings_for(llm, tmp_path, images=False)
    async with App(settings, channels={"telegram.main": channel}) as app:
        messages = await ask(app, llm, channel, message(1, file("photo", "chart.png")))
    assert image_urls(messages) == []
    content = messages[-1]["content"]
    assert content.startswith("question 1\n\n[image chart.png (attachment ")
    # the line says what the model cannot do: no "is attached", no size it is "shown at"
    assert "PNG image, 2000×1000, 8 KB) is not shown: this assistant cannot see images; " in (
        content
    )
    assert "saved in the workspace as attachments/" in content
    assert "shown at" not in content and "is attached" not in content


async def test_old_attachments_are_deleted_when_the_app_starts(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    saved = tmp_path / "attachments" / "0ld-notes.txt"
    saved.parent.mkdir()
    saved.write_text("old")
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.attachments.record(
            AttachmentRecord(
                id="0ld",
                session_key=f"telegram.main:{CHAT}",
                turn_id="t0",
                channel="telegram.main",
                conversation_id=CHAT,
                user_id=USER,
                name="notes.txt",
                kind=AttachmentKind.TEXT,
                mime_type="text/plain",
                size=3,
                path=str(saved),
                created_at=time.time() - 4 * DAY_S,  # keep_days is 3
            )
        )
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        # The prune runs in its own task, started with the App, and tells nobody: it deletes
        # the row, then the file (in a thread). Waiting for the row alone raced the unlink.
        async with asyncio.timeout(120):
            while await app.store.attachments.get("0ld") is not None or saved.exists():  # noqa: ASYNC110
                await asyncio.sleep(0.05)


async def test_an_image_with_too_many_pixels_is_refused_with_one_line_and_a_photo_still_shown(
    llm: OpenAIFake, tmp_path: Path
) -> None:
    """One message's worth (parallel_downloads, 3) of 9400×9400 PNGs that would each decode
    into a gigabyte, and a 48-megapixel photo: each PNG gets the line that says why it is not
    shown, from its header alone, and the photo is shown (decoded at a reduced scale); asked
    for again with view_attachment, a PNG gets the same reason."""
    bomb = bomb_png(9400, 9400)
    photo = encoded(Image.new("RGB", (8000, 6000), (30, 90, 160)), "JPEG", quality=60)
    channel = FileChannel(TELEGRAM, {"bomb": bomb, "photo": photo})
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        messages = await ask(
            app,
            llm,
            channel,
            message(
                1,
                file("bomb", "a.png"),
                file("bomb", "b.png"),
                file("bomb", "c.png"),
                file("photo", "camera.jpg"),
            ),
        )
        llm.queue_tool_calls([("view_attachment", {"attachment": "a.png"})])
        viewed = await ask(app, llm, channel, message(2))
    content = texts(messages[-1]["content"])
    why = (
        "is not shown: it is 9,400×9,400 pixels (88.4 megapixels), more than the 24 "
        "megapixels an image may have to be shown; saved in the workspace as attachments/"
    )
    assert [line for line in content.splitlines() if why in line] == [
        line for line in content.splitlines() if line.startswith("[image ") and ".png" in line
    ]
    assert content.count(why) == 3
    assert content.count(SMALLER_IMAGE) == 3
    assert "JPEG image, 8000×6000, shown at 1568×1176" in content
    [url] = image_urls(messages)
    assert url.startswith("data:image/jpeg;base64,")
    [result] = [m["content"] for m in viewed if m["role"] == "tool"]
    assert "cannot be shown: it is 9,400×9,400 pixels (88.4 megapixels)" in result
    assert result.endswith(SMALLER_IMAGE)
