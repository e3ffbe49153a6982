"""Files on Slack through the real slack_sdk / slack-bolt against the fake: a file a user
shares arrives as an attachment the adapter downloads with the bot token from Slack's own
hosts (every redirect checked), and ``send_file`` shares a file through the external upload
flow, in the thread it answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.envelope import Attachment, DeliveryTarget, IngressEnvelope
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge, ChannelError
from bot.store import Store
from channels.slack.adapter import SlackChannel
from channels.slack.file_hosts import FileRef
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import BOT_USER, JSON, FakeSlack, event_callback, message_event
from tests.fakes.slack_setup import BOT_TOKEN, REF, channel_for

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
CSV = b"when,what\n2024-01-01,deploy\n2024-01-02,rollback\n"


@pytest.fixture
def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
async def channel(
    slack: FakeSlack, store: Store, host: RecordingHost
) -> AsyncIterator[SlackChannel]:
    built = channel_for(slack, store)
    async with running(built, host):
        yield built


async def shared(slack: FakeSlack, host: RecordingHost, *files: JSON) -> IngressEnvelope:
    """The envelope of a message sharing ``files``, pushed through Socket Mode to the
    running channel: the attachments are what the adapter normalised."""
    count = len(host.envelopes) + 1
    event = message_event(
        f"<@{BOT_USER}> have a look",
        subtype="file_share",
        ts=f"1700000001.{count:06d}",
        files=list(files),
    )
    await slack.push("events_api", event_callback(event))
    return (await host.wait_envelopes(count))[-1]


async def read_all(channel: SlackChannel, attachment: Attachment) -> bytes:
    return b"".join([chunk async for chunk in channel.downloads.download_attachment(attachment)])


def no_secret_logged(logs: Sequence[Mapping[str, Any]], *secrets: str) -> None:
    text = json.dumps(logs, default=str)
    for secret in secrets:
        assert secret not in text


# -- downloads ---------------------------------------------------------------------------------


async def test_a_shared_file_is_downloaded_with_the_bot_token(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    assert channel.downloads is not None
    envelope = await shared(slack, host, slack.files.share("shot.png", PNG, "image/png"))
    (attachment,) = envelope.attachments
    assert (attachment.kind, attachment.name, attachment.mime_type, attachment.size) == (
        "image",
        "shot.png",
        "image/png",
        len(PNG),
    )
    ref = FileRef.decode(attachment.ref)
    assert ref.file_id.startswith("F") and "/download/shot.png" in ref.url

    assert await read_all(channel, attachment) == PNG
    (request,) = slack.files.requests
    assert request.authorization == f"Bearer {BOT_TOKEN}"


async def test_a_redirect_on_slacks_host_is_followed(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("data.csv", CSV, "text/csv", redirect="same")
    (attachment,) = (await shared(slack, host, file)).attachments
    with capture_logs() as logs:
        assert await read_all(channel, attachment) == CSV
    first, signed = slack.files.requests
    assert first.path.endswith("/download/data.csv") and signed.path.startswith("/files-origin/")
    assert signed.query.startswith("sig=")
    no_secret_logged(logs, BOT_TOKEN, signed.query)


async def test_a_redirect_to_another_host_is_refused_and_gets_no_token(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("data.csv", CSV, "text/csv", redirect="foreign")
    (attachment,) = (await shared(slack, host, file)).attachments
    with capture_logs() as logs, pytest.raises(AttachmentRefused) as refused:
        await read_all(channel, attachment)
    assert "Slack's own hosts" in str(refused.value)
    assert len(slack.files.requests) == 1
    assert slack.files.foreign_requests == []
    assert any(e["event"] == "slack_file_host_refused" and e["host"] == "localhost" for e in logs)
    no_secret_logged(logs, BOT_TOKEN, slack.files.shared[file["id"]].signature)


async def test_a_file_url_off_slacks_hosts_is_never_fetched(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("data.csv", CSV, "text/csv")
    # the same file, its URL pointing at the other host (as a forged payload could)
    file["url_private_download"] = file["url_private_download"].replace("127.0.0.1", "localhost")
    (attachment,) = (await shared(slack, host, file)).attachments
    with pytest.raises(AttachmentRefused):
        await read_all(channel, attachment)
    assert slack.files.requests == []


async def test_slacks_sign_in_page_names_the_missing_scope(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    pdf = slack.files.share("a.pdf", b"%PDF-1.4", "application/pdf")
    (attachment,) = (await shared(slack, host, pdf)).attachments
    slack.files.read_scope = False
    with pytest.raises(AttachmentError) as failed:
        await read_all(channel, attachment)
    assert "files:read" in str(failed.value)
    assert "xoxb" not in str(failed.value) and "http" not in str(failed.value)


async def test_a_file_event_without_a_url_is_looked_up(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("data.csv", CSV, "text/csv")
    # Slack Connect and some other events give only the id: "file_access": "check_file_info"
    bare = {"id": file["id"], "mode": "hidden_by_limit", "file_access": "check_file_info"}
    (attachment,) = (await shared(slack, host, bare)).attachments
    assert await read_all(channel, attachment) == CSV
    (info,) = slack.calls_of("files.info")
    assert info.params["file"] == file["id"]

    slack.files.read_scope = False
    with pytest.raises(AttachmentError) as failed:
        await read_all(channel, attachment)
    assert "files:read" in str(failed.value)


async def test_a_deleted_file_is_a_plain_error(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("gone.txt", b"bye", "text/plain")
    (attachment,) = (await shared(slack, host, file)).attachments
    del slack.files.shared[file["id"]]
    with pytest.raises(AttachmentError) as failed:
        await read_all(channel, attachment)
    assert "no longer has this file" in str(failed.value)


# -- size ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_download_stops_over_the_limit(
    slack: FakeSlack, store: Store, host: RecordingHost, channel: SlackChannel, chunked: bool
) -> None:
    data = bytes(300_000)
    # the event understates the size, so only the download itself can notice
    file = slack.files.share("big.bin", data, "application/octet-stream", chunked=chunked, size=10)
    (attachment,) = (await shared(slack, host, file)).attachments
    small = channel_for(slack, store, download_max_bytes=100_000)
    assert small.downloads.download_limit() == 100_000
    received: list[bytes] = []
    with pytest.raises(AttachmentTooLarge) as too_large:
        async for chunk in small.downloads.download_attachment(attachment):
            received.append(chunk)
    assert "0.1 MB" in str(too_large.value)
    assert sum(map(len, received)) <= 100_000
    if chunked:
        assert received  # streamed: chunks arrived before the limit was passed


async def test_a_file_stated_over_the_limit_is_not_fetched(
    slack: FakeSlack, store: Store, host: RecordingHost, channel: SlackChannel
) -> None:
    file = slack.files.share("big.bin", bytes(1000), "application/octet-stream", size=5_000_000)
    (attachment,) = (await shared(slack, host, file)).attachments
    small = channel_for(slack, store, download_max_bytes=1_000_000)
    with pytest.raises(AttachmentTooLarge):
        await read_all(small, attachment)
    assert slack.files.requests == []


async def test_a_caller_may_stop_reading_early(
    slack: FakeSlack, host: RecordingHost, channel: SlackChannel
) -> None:
    data = bytes(range(256)) * 2000
    file = slack.files.share("big.bin", data, "application/octet-stream", chunked=True)
    (attachment,) = (await shared(slack, host, file)).attachments
    chunks = channel.downloads.download_attachment(attachment)
    first = await anext(chunks)
    await chunks.aclose()  # type: ignore[attr-defined]
    assert data.startswith(first) and len(first) < len(data)


# -- uploads -----------------------------------------------------------------------------------


async def test_send_file_shares_it_in_the_thread(
    slack: FakeSlack, channel: SlackChannel, tmp_path: Path
) -> None:
    assert channel.files is not None
    path = tmp_path / "report.csv"
    path.write_bytes(CSV)
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id="1700000001.000200")
    sent = await channel.files.send_file(target, path, name="q3.csv", caption="The **Q3** numbers")

    (upload,) = slack.files.uploads
    assert (upload.name, upload.data) == ("q3.csv", CSV)
    assert (upload.channel, upload.thread_ts) == ("C0001", "1700000001.000200")
    assert upload.initial_comment == "The *Q3* numbers"
    assert [m.message_id for m in sent] == [upload.ts]
    assert slack.messages[("C0001", upload.ts)]["files"][0]["id"] == upload.file_id
    (asked,) = slack.calls_of("files.getUploadURLExternal")
    assert (asked.params["filename"], int(asked.params["length"])) == ("q3.csv", len(CSV))
    assert slack.calls_of("files.upload") == []
    assert slack.calls_of("chat.postMessage") == []


async def test_a_top_level_file_with_no_caption(
    slack: FakeSlack, channel: SlackChannel, tmp_path: Path
) -> None:
    path = tmp_path / "shot.png"
    path.write_bytes(PNG)
    target = DeliveryTarget(channel=REF, conversation_id="D0001")
    await channel.files.send_file(target, path, name="shot.png")
    (upload,) = slack.files.uploads
    assert (upload.data, upload.thread_ts, upload.initial_comment) == (PNG, None, None)


async def test_a_keyed_file_is_found_again_by_its_caption(
    slack: FakeSlack, channel: SlackChannel, tmp_path: Path
) -> None:
    path = tmp_path / "answer.md"
    path.write_bytes(b"# A long answer\n" * 200)
    thread = "1700000001.000200"
    target = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=thread)
    sent = await channel.files.send_file(
        target, path, name="answer.md", caption="The answer is in the file.", key="reply-7"
    )

    (upload,) = slack.files.uploads
    assert upload.initial_comment is None and upload.thread_ts == thread
    (caption,) = slack.calls_of("chat.postMessage")
    assert caption.params["text"] == "The answer is in the file."
    assert caption.params["thread_ts"] == thread
    assert [m.message_id for m in sent] == [upload.ts, caption_ts(slack, "reply-7")]

    slack.add_message("C0001", thread, user="UANN", text="question")
    found = await channel.delivery.find_delivered(
        target, key="reply-7", text="", after_message_id=f"C0001:{thread}"
    )
    assert found is not None and [m.message_id for m in found] == [caption_ts(slack, "reply-7")]


def caption_ts(slack: FakeSlack, key: str) -> str:
    (ts,) = [
        ts
        for (_, ts), message in slack.messages.items()
        if (message.get("metadata") or {}).get("event_payload", {}).get("key") == key
    ]
    return ts


async def test_a_file_over_the_upload_limit_is_refused_before_sending(
    slack: FakeSlack, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(bytes(2_000))
    channel = channel_for(slack, store, upload_max_bytes=1_000)
    target = DeliveryTarget(channel=REF, conversation_id="C0001")
    assert channel.files.upload_limit(target) == 1_000
    with pytest.raises(ChannelError) as refused:
        await channel.files.send_file(target, path, name="big.bin")
    assert "upload_max_bytes" in str(refused.value)
    assert slack.calls_of("files.getUploadURLExternal") == []
    assert slack.files.uploads == []


async def test_a_missing_file_and_a_refused_conversation_are_plain_errors(
    slack: FakeSlack, channel: SlackChannel, tmp_path: Path
) -> None:
    target = DeliveryTarget(channel=REF, conversation_id="UGONE")
    slack.conversations.closed_dms.add("UGONE")
    with pytest.raises(ChannelError) as unreadable:
        await channel.files.send_file(target, tmp_path / "nope.txt", name="nope.txt")
    assert "cannot be read" in str(unreadable.value)
    path = tmp_path / "note.txt"
    path.write_text("hello")
    with pytest.raises(ChannelError) as refused:
        await channel.files.send_file(target, path, name="note.txt")
    assert "conversation" in str(refused.value)
    assert slack.files.uploads == []
