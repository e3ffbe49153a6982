"""``view_attachment`` and ``send_file`` through the daemon: an App on a real SQLite file behind
the in-process channel that serves and takes files, an OpenAI-compatible vision model on
loopback whose requests are read back. A photo sent in one turn is shown again in a later
one only when the model asks for it, as an image after the tool results; the model sends a
workspace file back into the conversation without an approval, and a file over the channel's
limit is refused before anything is uploaded."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import (
    Attachment,
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from bot.providers.chat_body import TOOL_IMAGES_NOTE
from bot.tools.builtin.scopes import scope_folder
from tests.attachments.images import png
from tests.fakes.channel import UploadChannel
from tests.fakes.openai_server import OpenAIFake

TELEGRAM = ChannelRef(kind="telegram", alias="main")
USER = "4242"
CHAT = "-100777"
SESSION = f"{TELEGRAM}:{CHAT}"
KEY_ENV = "HATCHWAY_TEST_OPENAI_KEY"
PHOTO = png(300, 200)


def settings_for(llm: OpenAIFake, tmp_path: Path) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 60.0},
            "channels": {"telegram": {"main": {"allowed_users": [USER]}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": llm.base_url,
                    "model": "gpt-4o",
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                }
            },
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
    )


def message(n: int, *attachments: Attachment) -> IngressEnvelope:
    return IngressEnvelope(
        channel=TELEGRAM,
        message_id=str(n),
        conversation_id=CHAT,
        sender=Sender(id=USER, display_name="Ana"),
        text=f"question {n}",
        reply_target=DeliveryTarget(channel=TELEGRAM, conversation_id=CHAT),
        attachments=attachments,
        is_group=True,
        addressed_to_bot=True,
        capabilities=Capabilities(),
    )


@pytest.fixture
async def llm() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


@pytest.fixture
def channel() -> UploadChannel:
    return UploadChannel(TELEGRAM, {"photo": PHOTO}, upload_max=100_000)


async def ask(app: App, channel: UploadChannel, n: int, *attachments: Attachment) -> None:
    await app.gateway.deliver(message(n, *attachments))
    await channel.wait_for(f"answer {n}")


def image_urls(messages: list[dict[str, Any]]) -> list[str]:
    return [
        part["image_url"]["url"]
        for m in messages
        if isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]


async def test_a_photo_is_viewed_again_and_a_file_sent_back(
    llm: OpenAIFake, channel: UploadChannel, tmp_path: Path
) -> None:
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        llm.queue_text("answer 1")
        await ask(app, channel, 1, Attachment(kind="image", name="chart.png", ref="photo"))
        (record,) = await app.store.attachments.of_session(SESSION)
        folder = (
            tmp_path
            / "workspace"
            / scope_folder("conversation", channel=str(TELEGRAM), conversation_id=CHAT)
        )
        (folder / "big.bin").write_bytes(b"x" * 100_001)
        llm.queue_tool_calls([("view_attachment", {"attachment": "chart.png"})])
        llm.queue_tool_calls(
            [
                ("send_file", {"path": "big.bin"}),
                ("send_file", {"path": f"attachments/{record.id}-chart.png", "name": "c.png"}),
            ]
        )
        llm.queue_text("answer 2")
        await ask(app, channel, 2)

    first, second, viewed, sent = (r.body["messages"] for r in llm.requests)
    assert len(image_urls(first)) == 1  # the photo with its own message
    assert image_urls(second) == []  # and not with the next one
    assert viewed[-1]["role"] == "user" and viewed[-1]["content"][0]["text"] == TOOL_IMAGES_NOTE
    assert viewed[-2]["role"] == "tool" and f"attachment {record.id}" in viewed[-2]["content"]
    assert len(image_urls(viewed)) == 1
    assert image_urls(sent) == image_urls(viewed)  # shown for the rest of that turn
    big, small = [m["content"] for m in sent if m["role"] == "tool"][-2:]
    assert big == (
        "ToolFailed: big.bin is 100,001 bytes, over the 100,000 bytes telegram.main takes "
        "there: nothing was sent (a smaller or compressed file would go)"
    )
    assert small.startswith("sent c.png (") and small.endswith(f") to telegram.main:{CHAT}")
    (upload,) = channel.uploads
    assert (upload.name, upload.data) == ("c.png", PHOTO)
    assert upload.target.conversation_id == CHAT
    assert channel.posted == []  # no approval card: the conversation the request came from


async def test_hostile_workspace_files_and_a_lying_name_through_the_daemon(
    llm: OpenAIFake, channel: UploadChannel, tmp_path: Path
) -> None:
    """A symlink loop and a pipe do not break the listing, a file of one 3 MB line is read
    by the byte cap and says so, no result names the daemon's folders, and a file sent
    under a name with a right-to-left override reaches the platform without it."""
    async with App(settings_for(llm, tmp_path), channels={"telegram.main": channel}) as app:
        folder = (
            tmp_path
            / "workspace"
            / scope_folder("conversation", channel=str(TELEGRAM), conversation_id=CHAT)
        )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "loop").symlink_to(folder / "loop")
        os.mkfifo(folder / "pipe")
        (folder / "dump.txt").write_bytes(b"a" * 3_000_000)
        (folder / "report.exe").write_bytes(b"MZ not really a program")
        llm.queue_tool_calls(
            [
                ("file_list", {}),
                ("file_read", {"path": "dump.txt"}),
                ("file_read", {"path": "loop"}),
                ("send_file", {"path": "report.exe", "name": "report\u202efdp.exe"}),
            ]
        )
        llm.queue_text("answer 1")
        await ask(app, channel, 1)

    results = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "tool"]
    listed, read, loop, sent = results
    assert listed.splitlines() == [
        "dump.txt  (3000000 B)",
        "loop  (symlink loop)",
        "pipe  (named pipe)",
        "report.exe  (23 B)",
    ]
    assert read.startswith(
        "[dump.txt: line 1 of 1, only its first 19,600 of 3,000,000 bytes (one read returns "
        "at most 19,600; the rest of this line cannot be shown by file_read)]\naaaa"
    )
    assert read.endswith("a" * 1000) and "characters cut" not in read  # shown whole
    assert loop == "ToolFailed: loop is a symlink loop (it leads back to itself)"
    assert all(str(tmp_path) not in text for text in results)
    assert sent.startswith("sent report_fdp.exe (")
    (upload,) = channel.uploads
    assert upload.name == "report_fdp.exe"
