"""Files through the real python-telegram-bot against the fake Bot API: what a user sends is
downloaded from the Bot API server only (size checked first, the token never shown), and
what the bot sends arrives as a photo or a document with its name, bytes and caption."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from PIL import Image
from structlog.testing import capture_logs

from bot.envelope import Attachment, DeliveryTarget, IngressEnvelope
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge, ChannelError
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from tests.fakes.channel_health import serving as running
from tests.fakes.loopback import serve_loopback
from tests.fakes.recording_host import RecordingHost
from tests.fakes.telegram_server import FakeTelegram, forum_chat, message, private_chat, user
from tests.fakes.telegram_setup import REF, REQUESTER, TOKEN, channel_for

CHAT = -100777
TOPIC_TARGET = DeliveryTarget(
    channel=REF, conversation_id=str(CHAT), thread_id="12", reply_to_message_id=f"{CHAT}:99"
)


def png(width: int, height: int) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


async def fetch(channel: TelegramChannel, attachment: Attachment) -> list[bytes]:
    return [chunk async for chunk in channel.downloads.download_attachment(attachment)]


async def received(tg: FakeTelegram, host: RecordingHost, **media: Any) -> IngressEnvelope:
    """The envelope of a DM from :data:`REQUESTER` carrying ``media`` (``photo=[...]``...)."""
    chat = private_chat(REQUESTER)
    payload = message(chat, user(REQUESTER), "", message_id=8, caption="look", **media)
    await tg.push({"message": payload})
    [envelope] = await host.wait_envelopes(1)
    return envelope


@asynccontextmanager
async def started(
    tg: FakeTelegram, store: Store, **overrides: Any
) -> AsyncIterator[TelegramChannel]:
    """The channel with ``overrides``, running for the block."""
    channel = channel_for(tg, store, **overrides)
    async with running(channel, RecordingHost()):
        yield channel


def document(file_id: str, size: int, name: str = "data.csv") -> dict[str, Any]:
    return {
        "file_id": file_id,
        "file_unique_id": "u" + file_id,
        "file_name": name,
        "mime_type": "text/csv",
        "file_size": size,
    }


@pytest.fixture
async def elsewhere() -> AsyncIterator[tuple[str, list[str]]]:
    """A server on another host name (``localhost``, not the fake's 127.0.0.1) that records
    every request: its base URL and the paths asked for."""
    hits: list[str] = []

    async def any_path(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(body=b"not telegram's")

    app = web.Application()
    app.router.add_get("/{tail:.*}", any_path)
    async with serve_loopback(app) as server:
        yield f"http://localhost:{server.port}", hits


def clean_of_token(exc: BaseException, logs: list[dict[str, Any]], records: str) -> None:
    """Neither the error (nor anything it carries) nor a log line names the bot token."""
    assert TOKEN not in str(exc) and TOKEN not in repr(exc)
    assert exc.__cause__ is None and exc.__context__ is None
    assert TOKEN not in repr(logs)
    assert TOKEN not in records


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
async def live(
    tg: FakeTelegram, store: Store, host: RecordingHost
) -> AsyncIterator[TelegramChannel]:
    channel = channel_for(tg, store, retry_after_max_s=5)
    async with running(channel, host):
        yield channel


# -- downloads -------------------------------------------------------------------------------


async def test_a_photo_is_its_largest_size_streamed(
    tg: FakeTelegram, live: TelegramChannel, host: RecordingHost
) -> None:
    small, large = png(90, 60), png(1280, 853)
    tg.file_store.add("PS", small, path="photos/file_1.jpg")
    tg.file_store.add("PL", large, path="photos/file_2.jpg")
    sizes = [
        {"file_id": "PS", "file_unique_id": "s", "width": 90, "height": 60, "file_size": 1},
        {"file_id": "PL", "file_unique_id": "l", "width": 1280, "height": 853, "file_size": 2},
    ]
    envelope = await received(tg, host, photo=sizes)
    [photo] = envelope.attachments
    assert (photo.kind, photo.name, photo.mime_type, photo.ref) == (
        "image",
        "photo.jpg",
        "image/jpeg",
        "PL",
    )
    assert b"".join(await fetch(live, photo)) == large
    assert tg.file_store.downloads == ["photos/file_2.jpg"]


async def test_a_document_arrives_in_chunks_byte_for_byte(
    tg: FakeTelegram, live: TelegramChannel, host: RecordingHost
) -> None:
    body = b"".join(b"%d,row %d,\xc3\xa9t\xc3\xa9\n" % (i, i) for i in range(40_000))
    tg.file_store.add("D1", body, path="documents/file_9.csv")
    envelope = await received(tg, host, document=document("D1", len(body)))
    [file] = envelope.attachments
    assert (file.kind, file.name, file.mime_type, file.size) == (
        "file",
        "data.csv",
        "text/csv",
        len(body),
    )
    chunks = await fetch(live, file)
    assert len(chunks) > 1 and b"".join(chunks) == body
    assert live.downloads.download_limit() == 20 * 1024 * 1024


async def test_a_file_over_the_limit_is_refused_before_any_download(
    tg: FakeTelegram, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    tg.file_store.add("BIG", b"x" * 5000)
    async with started(tg, store, download_max_bytes=1000) as channel:
        with capture_logs() as logs, pytest.raises(AttachmentTooLarge) as refused:
            await fetch(channel, Attachment(kind="file", name="dump.log", ref="BIG"))
        assert str(refused.value) == (
            "dump.log is 5 KB; Telegram lets bots download files of at most 1000 bytes."
        )
        assert tg.file_store.downloads == []
        assert [c.params["file_id"] for c in tg.calls_of("getFile")] == ["BIG"]
        clean_of_token(refused.value, logs, caplog.text)


async def test_telegrams_own_too_big_answer_is_the_limit(tg: FakeTelegram, store: Store) -> None:
    tg.file_store.add("HUGE", b"x", size=25 * 1024 * 1024)
    async with started(tg, store) as channel:
        with pytest.raises(AttachmentTooLarge, match=r"report\.pdf is larger than the 20 MB"):
            await fetch(channel, Attachment(kind="file", name="report.pdf", ref="HUGE"))
        assert tg.file_store.downloads == []


async def test_a_body_longer_than_announced_is_cut_off(tg: FakeTelegram, store: Store) -> None:
    tg.file_store.add("LIE", b"y" * 300_000, size=100)
    async with started(tg, store, download_max_bytes=200_000) as channel:
        got: list[bytes] = []
        with pytest.raises(AttachmentTooLarge):
            async for chunk in channel.downloads.download_attachment(
                Attachment(kind="file", ref="LIE")
            ):
                got.append(chunk)
        assert sum(map(len, got)) <= 200_000


@pytest.mark.parametrize("how", ["path", "redirect"])
async def test_a_file_url_off_the_bot_api_host_is_refused(
    tg: FakeTelegram,
    store: Store,
    elsewhere: tuple[str, list[str]],
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    caplog.set_level(logging.WARNING)
    base, hits = elsewhere
    tg.file_store.add("D2", b"secret report")
    if how == "path":
        tg.file_store.foreign_url = f"{base}/documents/D2"
    else:
        tg.file_store.redirect_to = f"{base}/documents/D2"
    async with started(tg, store) as channel:
        with capture_logs() as logs, pytest.raises(AttachmentRefused, match="localhost") as refused:
            await fetch(channel, Attachment(kind="file", name="q3.xlsx", ref="D2"))
        assert hits == []
        assert "q3.xlsx was not downloaded" in str(refused.value)
        assert [e["event"] for e in logs] == ["telegram_download_refused"]
        clean_of_token(refused.value, logs, caplog.text)


async def test_a_path_on_the_servers_disk_is_not_read(
    tg: FakeTelegram, store: Store, tmp_path: Path
) -> None:
    local = tmp_path / "on-disk.txt"
    local.write_text("a file of this machine")
    tg.file_store.add("L1", b"")
    tg.file_store.foreign_url = str(local)
    async with started(tg, store) as channel:
        with pytest.raises(AttachmentRefused, match="local mode"):
            await fetch(channel, Attachment(kind="file", ref="L1"))


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("unknown", r"^The file was refused by Telegram \(Invalid file_id\)\.$"),
        ("missing", r"^The file could not be downloaded from Telegram \(HTTP 404\)\.$"),
        ("down", r"^The file could not be downloaded from Telegram \(the connection failed\)\.$"),
    ],
)
async def test_a_failed_download_is_one_plain_sentence(
    tg: FakeTelegram,
    store: Store,
    caplog: pytest.LogCaptureFixture,
    setup: str,
    expected: str,
) -> None:
    caplog.set_level(logging.WARNING)
    file_base_url = tg.file_base_url
    if setup != "unknown":
        tg.file_store.add("GONE", b"was here")
    if setup == "missing":
        tg.file_store.foreign_url = "documents/moved"
    if setup == "down":
        # getFile answers; the file server (here: a port nothing listens on) does not
        async with serve_loopback(web.Application()) as closed:
            file_base_url = closed.url("/file/bot")
    async with started(tg, store, file_base_url=file_base_url) as channel:
        with capture_logs() as logs, pytest.raises(AttachmentError, match=expected) as failed:
            await fetch(channel, Attachment(kind="file", ref="GONE"))
        clean_of_token(failed.value, logs, caplog.text)


# -- sending files ---------------------------------------------------------------------------


async def test_a_document_arrives_with_its_name_bytes_and_caption(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path
) -> None:
    body = b"id,total\n1,3\n" * 1000
    path = tmp_path / "out.bin"
    path.write_bytes(body)
    sent = await live.files.send_file(
        TOPIC_TARGET, path, name="totals.csv", caption="The **totals**"
    )
    [call] = tg.calls_of("sendDocument")
    assert call.params["document"] == {"file_name": "totals.csv", "bytes": body}
    assert call.params["caption"] == "The <b>totals</b>"
    assert call.params["parse_mode"] == "HTML"
    assert call.params["message_thread_id"] == 12
    assert call.params["reply_parameters"]["message_id"] == 99
    [shown] = tg.bot_messages(CHAT)
    assert shown["document"]["file_name"] == "totals.csv"
    assert shown["caption"] == "The totals"
    assert tg.files[f"documents/{shown['document']['file_id']}"] == body
    assert [m.message_id for m in sent] == [f"{CHAT}:{shown['message_id']}"]
    assert not tg.calls_of("sendPhoto")


async def test_a_picture_goes_as_a_photo(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path
) -> None:
    image = png(800, 600)
    path = tmp_path / "chart.png"
    path.write_bytes(image)
    sent = await live.files.send_file(TOPIC_TARGET, path, name="chart.png", caption="Q3")
    [call] = tg.calls_of("sendPhoto")
    assert call.params["photo"] == {"file_name": "chart.png", "bytes": image}
    [shown] = tg.bot_messages(CHAT)
    assert [(p["width"], p["height"]) for p in shown["photo"]] == [(800, 600)]
    assert tg.files[f"photos/{shown['photo'][0]['file_id']}"] == image
    assert shown["caption"] == "Q3" and len(sent) == 1
    assert not tg.calls_of("sendDocument")


@pytest.mark.parametrize("size", [(9000, 1500), (2100, 100)])
async def test_a_picture_telegram_would_not_show_goes_as_a_document(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path, size: tuple[int, int]
) -> None:
    """Sides adding up to over 10,000 pixels, or a ratio over 20: not a photo."""
    image = png(*size)
    path = tmp_path / "wide.png"
    path.write_bytes(image)
    await live.files.send_file(TOPIC_TARGET, path, name="wide.png")
    assert not tg.calls_of("sendPhoto")
    [call] = tg.calls_of("sendDocument")
    assert call.params["document"] == {"file_name": "wide.png", "bytes": image}


async def test_a_photo_telegram_refuses_goes_again_as_a_document(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path
) -> None:
    image = png(300, 200)
    path = tmp_path / "p.png"
    path.write_bytes(image)
    tg.fail_next("sendPhoto", 400, "Bad Request: IMAGE_PROCESS_FAILED")
    await live.files.send_file(TOPIC_TARGET, path, name="p.png", caption="see")
    [shown] = tg.bot_messages(CHAT)
    assert shown["document"]["file_name"] == "p.png" and shown["caption"] == "see"
    assert len(tg.calls_of("sendPhoto")) == 1


async def test_a_long_caption_is_cut_and_the_rest_follows(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path
) -> None:
    words = [f"word{i}" for i in range(900)]
    caption = " ".join(words)
    path = tmp_path / "notes.txt"
    path.write_text("notes")
    sent = await live.files.send_file(TOPIC_TARGET, path, name="notes.txt", caption=caption)
    shown = tg.bot_messages(CHAT)
    assert len(sent) == len(shown) >= 2
    assert len(shown[0]["caption"]) <= 1024
    assert all(m.get("message_thread_id") == 12 for m in shown)
    texts = [shown[0]["caption"], *(m["text"] for m in shown[1:])]
    assert " ".join(texts).split() == words


async def test_a_file_over_the_upload_limit_is_refused_before_sending(
    tg: FakeTelegram, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "big.zip"
    path.write_bytes(b"z" * 5000)
    async with started(tg, store, upload_max_bytes=4096) as channel:
        assert channel.files.upload_limit(TOPIC_TARGET) == 4096
        with pytest.raises(ChannelError, match=r"^big\.zip is 5 KB; .* at most 4 KB from a bot\.$"):
            await channel.files.send_file(TOPIC_TARGET, path, name="big.zip")
        assert not tg.calls_of("sendDocument")


async def test_a_file_goes_to_a_forum_topic_chat(
    tg: FakeTelegram, live: TelegramChannel, tmp_path: Path
) -> None:
    await tg.push({"message": message(forum_chat(CHAT), user(REQUESTER), "hi", message_id=99)})
    path = tmp_path / "a.md"
    path.write_text("# A")
    await live.files.send_file(TOPIC_TARGET, path, name="a.md")
    [shown] = tg.bot_messages(CHAT)
    assert shown["chat"]["type"] == "supergroup" and shown["message_thread_id"] == 12
