"""Replies that can be found again after a crash, with the real discord.py against the
loopback fake: each message of a keyed reply carries its own nonce (Discord's 25
characters, ``enforce_nonce``), so a repeated send is not doubled; ``find_delivered``
recognises the bot's reply after the user's message by its rendered text and its reply
reference, all of a split reply, part of one cut off, none, or None when Discord cannot be
asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.errors import ChannelAuthError
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from channels.discord.delivery_check import NONCE_CHARS
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import BOT, BOT_ID, GENERAL, RecordingHost, make_channel, running
from tests.fakes.discord_setup import said as said_in

pytestmark = pytest.mark.usefixtures("discord_env")

KEY = "0f1e2d3c4b5a69788796a5b4"  # a turn's reply key (bot.turn.REPLY_KEY_CHARS long)
LONG = "\n\n".join(f"Paragraph {n}: " + "words " * 120 for n in range(6))


@pytest.fixture
async def connected(
    fake: FakeDiscord, store: Store
) -> AsyncIterator[tuple[DiscordChannel, IngressEnvelope]]:
    """The adapter, connected, and a message from alice mentioning it."""
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said_in(fake, f"<@{BOT_ID}> hi", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        yield channel, envelope


async def test_each_message_of_a_keyed_reply_has_its_own_enforced_nonce(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    sent = await channel.send(envelope.reply_target, LONG, key=KEY)
    posts = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    nonces = [c.body["nonce"] for c in posts if c.body is not None]
    assert len(sent) == len(posts) >= 2
    assert all(c.body is not None and c.body["enforce_nonce"] is True for c in posts)
    assert len(set(nonces)) == len(nonces) and all(len(n) <= NONCE_CHARS for n in nonces)
    assert all(KEY not in n for n in nonces)  # derived, not the key itself


async def test_a_repeated_send_under_the_same_key_is_not_doubled(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    first = await channel.send(envelope.reply_target, "The answer.", key=KEY)
    again = await channel.send(envelope.reply_target, "The answer.", key=KEY)
    other = await channel.send(envelope.reply_target, "Something went wrong.", key=KEY)
    unkeyed = [await channel.send(envelope.reply_target, "progress") for _ in range(2)]
    assert [m.message_id for m in again] == [m.message_id for m in first]
    assert other[0].message_id != first[0].message_id  # same key, another reply
    assert unkeyed[0][0].message_id != unkeyed[1][0].message_id
    bot_posts = [m for m in fake.messages.values() if m["author"]["id"] == BOT_ID]
    assert len(bot_posts) == 4


async def test_a_posted_reply_is_found_whole(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    assert channel.delivery is not None
    await channel.send(envelope.reply_target, "⏳ working")  # a progress message first
    sent = await channel.send(envelope.reply_target, LONG, key=KEY)
    await fake.dispatch("MESSAGE_CREATE", said_in(fake, "thanks"))
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text=LONG, after_message_id=envelope.message_id
    )
    assert found is not None
    assert [m.message_id for m in found] == [m.message_id for m in sent]
    assert all(m.target == envelope.reply_target for m in found)
    [lookup] = fake.calls_to("GET", f"/channels/{GENERAL}/messages")
    assert lookup.query["after"] == envelope.message_id


async def test_a_reply_cut_off_part_way_is_found_in_part(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    first, *rest = await channel.send(envelope.reply_target, LONG, key=KEY)
    for message in rest:  # as if the process had died after the first message
        await fake.delete_message(message.message_id)
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text=LONG, after_message_id=envelope.message_id
    )
    assert rest and found is not None
    assert [m.message_id for m in found] == [first.message_id]


async def test_nothing_found_when_the_reply_never_left(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text="The answer.", after_message_id=envelope.message_id
    )
    assert found == []


async def test_the_same_words_answering_another_message_are_not_this_reply(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    later = said_in(fake, f"<@{BOT_ID}> and this?", mentions=[BOT])
    await fake.dispatch("MESSAGE_CREATE", later)
    later_target = replace(envelope.reply_target, reply_to_message_id=later["id"])
    await channel.send(later_target, "Yes.", key="another-turn")
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text="Yes.", after_message_id=envelope.message_id
    )
    assert found == []


async def test_a_thread_never_opened_holds_nothing(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    in_own_thread = replace(envelope.reply_target, thread_id=envelope.message_id)
    found = await channel.delivery.find_delivered(
        in_own_thread, key=KEY, text="The answer.", after_message_id=envelope.message_id
    )
    assert found == []


async def test_none_when_discord_cannot_be_asked(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    await channel.send(envelope.reply_target, "The answer.", key=KEY)
    fake.failing[rf"/channels/{GENERAL}/messages"] = 503
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text="The answer.", after_message_id=envelope.message_id
    )
    assert found is None


async def test_without_the_users_message_the_latest_messages_are_looked_at(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope]
) -> None:
    channel, envelope = connected
    sent = await channel.send(envelope.reply_target, "The answer.", key=KEY)
    found = await channel.delivery.find_delivered(
        envelope.reply_target, key=KEY, text="The answer.", after_message_id=None
    )
    assert found is not None and [m.message_id for m in found] == [sent[0].message_id]
    [lookup] = fake.calls_to("GET", f"/channels/{GENERAL}/messages")
    assert "after" not in lookup.query


async def test_asked_as_the_adapter_starts_it_waits_for_the_login(
    fake: FakeDiscord, store: Store
) -> None:
    """Start-up recovery asks while the channel is still logging in, after a restart."""
    before = make_channel(fake, store)
    host = RecordingHost()
    async with running(before, host):
        await fake.dispatch("MESSAGE_CREATE", said_in(fake, f"<@{BOT_ID}> hi", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        sent = await before.send(envelope.reply_target, "The answer.", key=KEY)
    after = make_channel(fake, store)  # a new process
    lookup = asyncio.create_task(
        after.delivery.find_delivered(
            envelope.reply_target, key=KEY, text="The answer.", after_message_id=envelope.message_id
        )
    )
    await asyncio.sleep(0)
    assert not lookup.done()
    async with running(after, RecordingHost()):
        found = await asyncio.wait_for(lookup, 10)
    assert found is not None and [m.message_id for m in found] == [sent[0].message_id]


async def test_none_when_the_adapter_cannot_log_in(
    fake: FakeDiscord, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHWAY_DISCORD_TOKEN", "not-the-right-token")
    channel = make_channel(fake, store)
    target = DeliveryTarget(channel=channel.ref, conversation_id=GENERAL)
    lookup = asyncio.create_task(
        channel.delivery.find_delivered(target, key=KEY, text="x", after_message_id=None)
    )
    with pytest.raises(ChannelAuthError):
        await asyncio.wait_for(channel.run(RecordingHost()), 10)
    assert await asyncio.wait_for(lookup, 10) is None
