"""``delivery.long_answer = "file"`` on Slack, through the real slack_sdk against the fake: a
long answer is shared as one ``answer.md`` (external upload flow) with the whole text, and the
reply's key still finds it after a restart; a slash command's answer, which only its user
sees, stays messages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.envelope import DeliveryTarget
from bot.store import Store
from channels.common.long_answer import ANSWER_NAME
from channels.slack.adapter import SlackChannel
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import FakeSlack
from tests.fakes.slack_setup import REF, channel_for

THREAD = "1700000001.000200"
TARGET = DeliveryTarget(channel=REF, conversation_id="C0001", thread_id=THREAD)
LONG = "The **rollout** went out in waves.\n\n" + "\n".join(
    f"- wave {i}: hosts {i * 10}-{i * 10 + 9} updated" for i in range(400)
)
FILE_DELIVERY: dict[str, Any] = {"long_answer": "file", "long_answer_max_messages": 2}


@pytest.fixture
async def channel(slack: FakeSlack, store: Store) -> AsyncIterator[SlackChannel]:
    built = channel_for(slack, store, delivery=FILE_DELIVERY)
    async with running(built, RecordingHost()):
        yield built


async def test_a_long_answer_is_shared_as_one_file_its_key_finds(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    sent = await channel.send(TARGET, LONG, key="reply-9")
    (upload,) = slack.files.uploads
    assert (upload.name, upload.data) == (ANSWER_NAME, LONG.encode())
    assert (upload.channel, upload.thread_ts) == ("C0001", THREAD)
    texts = [str(c.params["text"]) for c in slack.calls_of("chat.postMessage")]
    assert len(texts) == 1 and "(The whole answer is in answer.md.)" in texts[0]
    assert "wave 399" not in texts[0]

    slack.add_message("C0001", THREAD, user="UANN", text="how did it go?")
    found = await channel.delivery.find_delivered(
        TARGET, key="reply-9", text=LONG, after_message_id=f"C0001:{THREAD}"
    )
    assert found is not None
    assert {m.message_id for m in found} <= {m.message_id for m in sent}


async def test_a_slash_commands_answer_stays_messages(
    slack: FakeSlack, channel: SlackChannel
) -> None:
    private = DeliveryTarget(
        channel=REF, conversation_id="C0001", reply_to_message_id="slash:UANN:trigger-1"
    )
    with capture_logs() as logs:
        await channel.send(private, LONG, key="reply-10")
    assert [e for e in logs if e["event"] == "long_answer_file_refused"] == []  # not tried
    assert slack.files.uploads == []
    assert slack.calls_of("files.getUploadURLExternal") == []
    assert len(slack.calls_of("chat.postEphemeral")) > 2
