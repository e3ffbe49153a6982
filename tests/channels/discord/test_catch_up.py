"""Catch-up after downtime, with the real discord.py against the loopback fake: what was
posted while the bot was stopped, or while a session Discord would not resume was down, is
fetched from the channel's history and delivered once, oldest first, within
``catch_up_max_age`` and ``catch_up_max_messages``; a resumed session gets the gateway's
replay instead, and a restart with nothing new delivers nothing. A guild channel the bot
never saw a message in (first posted to while it was away) is caught up from the watermark,
when one was ever stored, at no cost when nothing in it is newer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from tests.fakes.discord_history import snowflake_at
from tests.fakes.discord_payloads import JSON, visible_only_to
from tests.fakes.discord_server import Call, FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    BOT,
    BOT_ID,
    DM,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
    settings_for,
)
from tests.fakes.scripted_provider import ScriptedProvider, reply

pytestmark = pytest.mark.usefixtures("discord_env")


def mention(fake: FakeDiscord, text: str, **fields: Any) -> JSON:
    return said(fake, f"<@{BOT_ID}> {text}", mentions=[BOT], **fields)


def said_ago(fake: FakeDiscord, text: str, seconds: float, **fields: Any) -> JSON:
    """A message posted ``seconds`` ago (its id says so, as Discord's do)."""
    payload = said(fake, text, **fields)
    payload["id"] = str(snowflake_at(time.time() - seconds))
    return payload


#: How long a wait for what the adapter does next may take before the test fails: generous,
#: since a loaded machine runs the fake and the client slowly; nothing here times anything.
WAIT_S = 30.0

#: discord.py sleeps 5 s before every IDENTIFY of a client but its first
#: (``Client.before_identify_hook``, after Discord's identify rate limit): a session
#: Discord will not resume is replaced no sooner, so a wait across it allows that too.
IDENTIFY_AGAIN_S = 5.0


async def caught_up(channel: DiscordChannel, says: str = "caught up") -> str:
    """Wait until the session's catch-up has finished; the health detail saying so."""
    async with asyncio.timeout(WAIT_S):
        while says not in channel.health.detail:  # noqa: ASYNC110 (no notification)
            await asyncio.sleep(0.005)
    return channel.health.detail


def history_calls(fake: FakeDiscord, channel_id: str = GENERAL) -> list[Call]:
    return fake.calls_to("GET", f"/channels/{channel_id}/messages")


async def seen_once(fake: FakeDiscord, store: Store, *messages: JSON, **options: Any) -> None:
    """A first run of the bot that sees ``messages`` live, then stops."""
    host = RecordingHost()
    channel = make_channel(fake, store, **options)
    async with running(channel, host):
        for message in messages:
            await fake.dispatch("MESSAGE_CREATE", message)
        await host.wait_envelopes(len(messages))


async def test_messages_posted_while_stopped_are_delivered_once_after_start(
    fake: FakeDiscord, store: Store
) -> None:
    first = mention(fake, "before the stop")
    await seen_once(fake, store, first)
    away = [mention(fake, "while stopped"), said(fake, "chatter"), mention(fake, "and again")]
    for message in away:
        await fake.post(message)  # nobody connected: only in the channel's history

    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        envelopes = await host.wait_envelopes(3)
        detail = await caught_up(channel)
    assert [e.message_id for e in envelopes] == [m["id"] for m in away]  # oldest first
    assert [e.text for e in envelopes] == ["while stopped", "chatter", "and again"]
    assert [e.addressed_to_bot for e in envelopes] == [True, False, True]
    assert "1 conversation(s), 3 message(s)" in detail
    [fetch] = history_calls(fake)
    assert fetch.query["after"] == first["id"]  # from the last message seen, not before


async def test_a_restart_with_nothing_new_fetches_nothing(fake: FakeDiscord, store: Store) -> None:
    await seen_once(fake, store, mention(fake, "hello"), said(fake, "last word"))
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        detail = await caught_up(channel)
    # the channel's last_message_id is the last message seen: no request at all
    assert history_calls(fake) == []
    assert host.envelopes == []
    assert "0 message(s)" in detail


async def test_a_session_discord_will_not_resume_is_caught_up(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await caught_up(channel)
        first = mention(fake, "before the drop")
        await fake.dispatch("MESSAGE_CREATE", first)
        await host.wait_envelopes(1)
        fake.resume_gate.clear()  # hold the client's RESUME while the gap happens
        await fake.drop_session()
        gap = [mention(fake, "during the gap"), said(fake, "more of it")]
        for message in [*gap, said(fake, "a first DM", channel_id=DM)]:
            await fake.post(message)  # not to any session: lost to the gateway
        fake.resume_gate.set()
        await host.wait_envelopes(3, wait_s=IDENTIFY_AGAIN_S + WAIT_S)
        await fake.dispatch("MESSAGE_CREATE", mention(fake, "after"))
        envelopes = await host.wait_envelopes(4)
    assert fake.invalid_sessions == 1 and fake.identifies == 2
    texts = [e.text for e in envelopes]
    assert texts == ["before the drop", "during the gap", "more of it", "after"]
    [fetch] = history_calls(fake)
    assert fetch.query["after"] == first["id"]
    # a conversation never seen is not watched: the DM waits for its next live message
    assert history_calls(fake, DM) == [] and "a first DM" not in texts


async def test_a_resumed_session_gets_the_replay_and_fetches_nothing(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await caught_up(channel)
        await fake.dispatch("MESSAGE_CREATE", mention(fake, "before"))
        await host.wait_envelopes(1)
        fake.resume_gate.clear()
        await fake.drop_connection()  # resumable
        await fake.post(mention(fake, "missed"))
        fake.resume_gate.set()
        envelopes = await host.wait_envelopes(2)
    assert fake.resumes == 1 and fake.identifies == 1
    assert envelopes[1].text == "missed"
    assert history_calls(fake) == []


async def test_messages_older_than_catch_up_max_age_are_not_fetched(
    fake: FakeDiscord, store: Store
) -> None:
    await seen_once(fake, store, said_ago(fake, "three hours ago", 3 * 3600))
    old = said_ago(fake, "two hours ago", 2 * 3600)
    recent = said_ago(fake, "ten minutes ago", 600)
    for message in (old, recent):
        await fake.post(message)
    host = RecordingHost()
    channel = make_channel(fake, store, catch_up_max_age=3600)
    async with running(channel, host):
        await caught_up(channel)
    assert [e.text for e in host.envelopes] == ["ten minutes ago"]
    [fetch] = history_calls(fake)
    assert int(old["id"]) < int(fetch.query["after"]) < int(recent["id"])


async def test_catch_up_max_messages_bounds_each_conversation(
    fake: FakeDiscord, store: Store
) -> None:
    await seen_once(fake, store, said(fake, "seen"))
    posted = [said(fake, f"message {n}") for n in range(5)]
    for message in posted:
        await fake.post(message)
    host = RecordingHost()
    channel = make_channel(fake, store, catch_up_max_messages=3)
    async with running(channel, host):
        await caught_up(channel)
    assert [e.text for e in host.envelopes] == ["message 0", "message 1", "message 2"]
    [fetch] = history_calls(fake)
    assert fetch.query["limit"] == "3"


async def test_dm_conversations_are_caught_up(fake: FakeDiscord, store: Store) -> None:
    await seen_once(fake, store, said(fake, "hi", channel_id=DM))
    await fake.post(said(fake, "are you there?", channel_id=DM))
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        [envelope] = await host.wait_envelopes(1)
    assert envelope.text == "are you there?"
    assert envelope.is_direct and envelope.addressed_to_bot and envelope.conversation_id == DM


async def test_zero_max_age_turns_catch_up_off(fake: FakeDiscord, store: Store) -> None:
    await seen_once(fake, store, said(fake, "seen"))
    await fake.post(mention(fake, "while stopped"))
    host = RecordingHost()
    channel = make_channel(fake, store, catch_up_max_age=0)
    async with running(channel, host):
        assert "catch-up off" in await caught_up(channel, "catch-up off")
        await fake.dispatch("MESSAGE_CREATE", mention(fake, "live"))
        envelopes = await host.wait_envelopes(1)
    assert [e.text for e in envelopes] == ["live"]
    assert history_calls(fake) == []


async def test_a_conversation_that_is_gone_stops_being_watched(
    fake: FakeDiscord, store: Store
) -> None:
    await seen_once(fake, store, said(fake, "hi", channel_id=DM))
    assert await store.channel_state.items("discord.main", "last_seen:") != []
    del fake.people.dm_channels[DM]  # the DM channel no longer exists: 404 Unknown Channel
    channel = make_channel(fake, store)
    async with running(channel, RecordingHost()):
        await caught_up(channel)
    assert fake.calls_to("GET", f"/channels/{DM}")
    assert await store.channel_state.items("discord.main", "last_seen:") == []
    asked = len(fake.calls_to("GET", f"/channels/{DM}"))
    channel = make_channel(fake, store)
    async with running(channel, RecordingHost()):
        await caught_up(channel)
    assert len(fake.calls_to("GET", f"/channels/{DM}")) == asked


async def test_a_failed_fetch_is_retried_by_the_next_start(fake: FakeDiscord, store: Store) -> None:
    first = said(fake, "seen")
    await seen_once(fake, store, first)
    await fake.post(mention(fake, "while stopped"))
    fake.failing[rf"/channels/{GENERAL}/messages"] = 503
    channel = make_channel(fake, store)
    async with running(channel, RecordingHost()):
        detail = await caught_up(channel)
    assert "1 to retry" in detail
    del fake.failing[rf"/channels/{GENERAL}/messages"]
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        [envelope] = await host.wait_envelopes(1)
    assert envelope.text == "while stopped"
    assert history_calls(fake)[-1].query["after"] == first["id"]


async def test_through_the_daemon_what_was_said_while_stopped_is_answered_once(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    provider = ScriptedProvider(
        [reply("first answer"), reply("answer while stopped")], when_exhausted=reply("extra")
    )
    for run in range(3):
        app = App(settings_for(fake, tmp_path), provider=provider, tools=[])
        async with app:
            channel = app.channels["discord.main"]
            assert isinstance(channel, DiscordChannel)
            await caught_up(channel)
            if run == 0:
                await fake.dispatch("MESSAGE_CREATE", mention(fake, "hello"))
                await fake.wait_until(lambda: "first answer" in fake.posted(GENERAL))
            if run == 1:
                await fake.wait_until(lambda: "answer while stopped" in fake.posted(GENERAL))
        if run == 0:
            await fake.post(mention(fake, "are you there?"))  # while stopped
    asked = [r.messages[-1].content for r in provider.requests]
    assert asked == ["hello", "are you there?"]
    assert fake.posted(GENERAL).count("answer while stopped") == 1
    assert "extra" not in fake.posted(GENERAL)


# channels the bot never saw a message in: from the watermark ------------------------------

OTHER = "800000000000000020"
THREAD = "800000000000000030"
WATERMARK = "catch_up_watermark"


@pytest.fixture
def other(fake: FakeDiscord) -> str:
    """A second text channel in the guild, and an active thread under #general."""
    fake.guilds[0].channels[OTHER] = "other"
    fake.guilds[0].threads[THREAD] = (GENERAL, ALICE["id"])
    return OTHER


async def watermark(store: Store) -> int:
    stored = await store.channel_state.get("discord.main", WATERMARK)
    assert stored is not None and stored.isdigit()
    return int(stored)


async def test_a_channel_first_posted_to_while_stopped_is_caught_up_from_the_watermark(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    await seen_once(fake, store, mention(fake, "in general"))
    mark = await watermark(store)
    away = [mention(fake, "first words", channel_id=other), said(fake, "more", channel_id=other)]
    in_thread = mention(fake, "in the thread", channel_id=THREAD)
    for message in [*away, in_thread]:
        await fake.post(message)
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        envelopes = await host.wait_envelopes(3)
        detail = await caught_up(channel)
    assert [e.text for e in envelopes] == ["first words", "more", "in the thread"]
    assert [e.addressed_to_bot for e in envelopes] == [True, False, True]
    assert "3 conversation(s), 3 message(s)" in detail  # #general (no request), other, thread
    [fetch] = history_calls(fake, other)
    assert fetch.query["after"] == str(mark)
    assert history_calls(fake, THREAD)[0].query["after"] == str(mark)
    assert history_calls(fake) == []  # #general's last message is the one seen
    # watched from now on: a row each
    rows = dict(await store.channel_state.items("discord.main", "last_seen:"))
    assert rows[f"last_seen:{other}"] == away[-1]["id"]
    assert rows[f"last_seen:{THREAD}"] == in_thread["id"]


async def test_a_channel_with_nothing_since_the_watermark_costs_no_request(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    await fake.post(said_ago(fake, "long before", 600, channel_id=other))
    await seen_once(fake, store, said(fake, "seen"))
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        detail = await caught_up(channel)
    assert history_calls(fake, other) == [] and history_calls(fake, THREAD) == []
    assert host.envelopes == []
    assert "caught up on 1 conversation(s), 0 message(s)" in detail  # #general only


async def test_the_first_start_ever_fetches_nothing_it_never_saw(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    await fake.post(mention(fake, "before the bot ever connected", channel_id=other))
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        # stored as soon as the session is up: a start killed within seconds leaves one
        assert await store.channel_state.get("discord.main", WATERMARK) is not None
        detail = await caught_up(channel)
    assert [c for c in fake.calls if c.method == "GET" and c.path.endswith("/messages")] == []
    assert host.envelopes == [] and "0 message(s)" in detail
    # the stop stored a watermark, not below the first connection: the next start does not
    # go back to what was posted before it either
    await watermark(store)
    channel = make_channel(fake, store)
    async with running(channel, host):
        await caught_up(channel)
    assert history_calls(fake, other) == [] and host.envelopes == []


async def test_unseen_channels_are_not_fetched_past_catch_up_max_age(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    # the last run stopped three hours ago
    stopped = snowflake_at(time.time() - 3 * 3600)
    await store.channel_state.set("discord.main", WATERMARK, str(stopped))
    old = said_ago(fake, "two hours ago", 2 * 3600, channel_id=other)
    recent = said_ago(fake, "ten minutes ago", 600, channel_id=other)
    for message in (old, recent):
        await fake.post(message)
    host = RecordingHost()
    channel = make_channel(fake, store, catch_up_max_age=3600)
    async with running(channel, host):
        await caught_up(channel)
    assert [e.text for e in host.envelopes] == ["ten minutes ago"]
    [fetch] = history_calls(fake, other)
    assert int(old["id"]) < int(fetch.query["after"]) < int(recent["id"])


async def test_a_channel_the_bot_may_not_read_is_not_fetched(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    await seen_once(fake, store, said(fake, "seen"))
    guild = fake.guilds[0]
    guild.overwrites[other] = visible_only_to(guild, ALICE["id"])
    await fake.post(mention(fake, "hidden from the bot", channel_id=other))
    channel = make_channel(fake, store)
    async with running(channel, RecordingHost()):
        await caught_up(channel)
    assert history_calls(fake, other) == []


async def test_an_unseen_channel_whose_fetch_failed_is_watched_and_retried(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    await seen_once(fake, store, said(fake, "seen"))
    mark = await watermark(store)
    await fake.post(mention(fake, "while stopped", channel_id=other))
    fake.failing[rf"/channels/{other}/messages"] = 503
    channel = make_channel(fake, store)
    async with running(channel, RecordingHost()):
        assert "1 to retry" in await caught_up(channel)
    rows = dict(await store.channel_state.items("discord.main", "last_seen:"))
    assert rows[f"last_seen:{other}"] == str(mark)  # watched from the watermark
    del fake.failing[rf"/channels/{other}/messages"]
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        [envelope] = await host.wait_envelopes(1)
    assert envelope.text == "while stopped"
    assert history_calls(fake, other)[-1].query["after"] == str(mark)


async def test_through_the_daemon_a_channel_first_used_while_stopped_is_answered_once(
    fake: FakeDiscord, tmp_path: Path, other: str
) -> None:
    provider = ScriptedProvider(
        [reply("first answer"), reply("answer in other")], when_exhausted=reply("extra")
    )
    for run in range(3):
        app = App(settings_for(fake, tmp_path), provider=provider, tools=[])
        async with app:
            channel = app.channels["discord.main"]
            assert isinstance(channel, DiscordChannel)
            await caught_up(channel)
            if run == 0:
                await fake.dispatch("MESSAGE_CREATE", mention(fake, "hello"))
                await fake.wait_until(lambda: "first answer" in fake.posted(GENERAL))
            if run == 1:
                await fake.wait_until(lambda: "answer in other" in fake.posted(other))
        if run == 0:
            await fake.post(mention(fake, "anyone here?", channel_id=other))  # while stopped
    asked = [r.messages[-1].content for r in provider.requests]
    assert asked == ["hello", "anyone here?"]
    assert fake.posted(other) == ["answer in other"]


class LiveDuringCatchUp(RecordingHost):
    """Holds the catch-up on ``trigger`` (a fetched message) until ``live`` was dispatched
    live and delivered: a live message reaching the new session while its catch-up runs."""

    def __init__(self, fake: FakeDiscord, trigger: str, live: JSON) -> None:
        super().__init__()
        self._fake, self._trigger, self._live = fake, trigger, live

    async def deliver(self, envelope: Any) -> None:
        await super().deliver(envelope)
        if envelope.text == self._trigger:
            await self._fake.dispatch("MESSAGE_CREATE", self._live)
            await self.wait_envelopes(len(self.envelopes) + 1)


async def test_a_live_message_in_an_unseen_channel_during_the_catch_up_does_not_skip_its_gap(
    fake: FakeDiscord, store: Store, other: str
) -> None:
    """The rolling-restart loss: a channel first posted to while no session was open gets a
    live message (or the bot's own answer, posted by another replica) before the catch-up
    reached the unseen channels; what was posted there in the gap is still fetched, and its
    row never claims more than the gap's start until then."""
    await seen_once(fake, store, mention(fake, "seen"))
    mark = await watermark(store)
    await fake.post(mention(fake, "general while stopped"))
    await fake.post(mention(fake, "other while stopped", channel_id=other))
    live = mention(fake, "other live", channel_id=other)
    host = LiveDuringCatchUp(fake, "general while stopped", live)
    channel = make_channel(fake, store)
    async with running(channel, host):
        await caught_up(channel)
        texts = [e.text for e in host.envelopes]
    assert sorted(texts) == ["general while stopped", "other live", "other while stopped"]
    assert history_calls(fake, other)[0].query["after"] == str(mark)
