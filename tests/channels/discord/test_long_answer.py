"""``delivery.long_answer = "file"`` on Discord, with the real discord.py against the fake: a
long answer is posted as one ``answer.md`` attachment replying to the request, with the whole
text, and the delivery check finds it again from the answer's text (by its caption)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.envelope import IngressEnvelope
from bot.store import Store
from channels.common.long_answer import ANSWER_NAME, caption_of
from channels.discord.adapter import DiscordChannel
from channels.discord.markup import render_chunks
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    BOT,
    BOT_ID,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
)

pytestmark = pytest.mark.usefixtures("discord_env")

KEY = "0f1e2d3c4b5a69788796a5b4"
LONG = "The **rollout** went out in waves.\n\n" + "\n".join(
    f"- wave {i}: hosts {i * 10}-{i * 10 + 9} updated" for i in range(300)
)


@pytest.fixture
async def connected(
    fake: FakeDiscord, store: Store
) -> AsyncIterator[tuple[DiscordChannel, IngressEnvelope]]:
    """The adapter with long answers as files, and a message from alice in #general."""
    host = RecordingHost()
    channel = make_channel(
        fake, store, delivery={"long_answer": "file", "long_answer_max_messages": 2}
    )
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> roll out", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        yield channel, envelope


async def test_a_long_answer_is_one_file_the_delivery_check_finds(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    assert len(render_chunks(LONG)) > 2
    sent = await channel.send(envelope.reply_target, LONG, key=KEY)
    [post] = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert post.files == {ANSWER_NAME: LONG.encode()}
    assert post.body is not None and post.body["content"] == caption_of(LONG)
    assert str(post.body["message_reference"]["message_id"]) == envelope.message_id
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text=LONG, after_message_id=envelope.message_id
    )
    assert found == sent and len(sent) == 1
