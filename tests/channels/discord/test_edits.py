"""Edited and deleted messages, with the real discord.py and the fake gateway's
MESSAGE_UPDATE / MESSAGE_DELETE: an edit whose text changed reaches the host as the message
reads now (same id), updates that change no text and the bot's own edits do not, a message
from before a restart counts as edited only with a fresh edit time; deletions reach it by
id. Through the daemon: an edit before the turn began is answered as edited, a message
deleted before its turn is never answered."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.providers.base import CompletionRequest, ProviderReply
from bot.store import InboxKey, Store
from bot.store.inbox import InboxEntry
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
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


async def test_an_edit_reaches_the_host_as_the_message_reads_now(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        message = said(fake, "what is 2+2?")
        await fake.dispatch("MESSAGE_CREATE", message)
        await host.wait_envelopes(1)
        await fake.edit_message(message["id"], f"<@{BOT_ID}> what is 3+3?")
        [edited] = await host.wait_edits(1)
    assert edited.message_id == message["id"]
    assert edited.text == "what is 3+3?"
    assert edited.addressed_to_bot  # the edit added the mention
    assert edited.reply_target.reply_to_message_id == message["id"]
    assert (edited.conversation_id, edited.sender.id) == (GENERAL, message["author"]["id"])


async def test_updates_that_change_no_text_and_the_bots_own_edits_are_not_edits(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        message = said(fake, "look at https://example.com", channel_id=DM)
        own = said(fake, "an answer", author=BOT)
        for created in (message, own):
            await fake.dispatch("MESSAGE_CREATE", created)
        await host.wait_envelopes(1)
        # a link preview arrives: the same text, an embed added
        await fake.dispatch("MESSAGE_UPDATE", {**message, "embeds": [{"type": "link"}]})
        await fake.edit_message(own["id"], "an edited answer")
        await fake.edit_message(message["id"], "look at https://example.org")
        edits = await host.wait_edits(1)
    assert [e.text for e in edits] == ["look at https://example.org"]


@pytest.mark.parametrize(
    ("edited_ago", "reported"),
    [(timedelta(seconds=5), True), (timedelta(days=2), False), (None, False)],
)
async def test_a_message_from_before_a_restart_counts_as_edited_only_when_freshly_edited(
    fake: FakeDiscord, store: Store, edited_ago: timedelta | None, reported: bool
) -> None:
    old = said(fake, "an old message")  # posted before this process started
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        marker = said(fake, "marker")
        await fake.dispatch("MESSAGE_CREATE", marker)
        await host.wait_envelopes(1)
        edited_at = None if edited_ago is None else datetime.now(UTC) - edited_ago
        update = {
            **old,
            "content": "an old message, edited",
            "edited_timestamp": None if edited_at is None else edited_at.isoformat(),
        }
        await fake.dispatch("MESSAGE_UPDATE", update)  # a real edit, or a pin, an embed …
        await fake.edit_message(marker["id"], "marker, edited")
        edits = await host.wait_edits(1 + reported)
    texts = [e.text for e in edits]
    assert texts == (["an old message, edited"] if reported else []) + ["marker, edited"]


async def test_deletions_reach_the_host_by_id(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        first, second, third = (said(fake, f"message {n}") for n in range(3))
        own = said(fake, "the bot's", author=BOT)
        for message in (first, second, third, own):
            await fake.dispatch("MESSAGE_CREATE", message)
        await host.wait_envelopes(3)
        guild_id = fake.guilds[0].id
        await fake.delete_message(own["id"])  # cached as the bot's own: not reported
        await fake.delete_message(first["id"])
        await fake.dispatch(
            "MESSAGE_DELETE_BULK",
            {"ids": [second["id"], third["id"]], "channel_id": GENERAL, "guild_id": guild_id},
        )
        deletions = await host.wait_deletions(3)
    assert [(str(ref), message_id) for ref, message_id in deletions] == [
        ("discord.main", first["id"]),
        ("discord.main", second["id"]),
        ("discord.main", third["id"]),
    ]


async def test_edits_and_deletions_outside_allowed_guilds_are_not_reported(
    fake: FakeDiscord, store: Store
) -> None:
    elsewhere = fake.add_guild(channels={"800000000000000099": "elsewhere"})
    host = RecordingHost()
    channel = make_channel(fake, store, allowed_guilds=[fake.guilds[0].id])
    async with running(channel, host):
        foreign = said(fake, "not ours", channel_id="800000000000000099")
        assert foreign["guild_id"] == elsewhere.id
        await fake.dispatch("MESSAGE_CREATE", foreign)
        await fake.edit_message(foreign["id"], "not ours, edited")
        await fake.delete_message(foreign["id"])
        ours = said(fake, "ours")
        await fake.dispatch("MESSAGE_CREATE", ours)
        await host.wait_envelopes(1)
        await fake.delete_message(ours["id"])
        deletions = await host.wait_deletions(1)
    assert host.edits == [] and [d[1] for d in deletions] == [ours["id"]]


async def test_through_the_daemon_an_edit_before_the_turn_is_answered_and_a_deletion_skipped(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    busy, release = asyncio.Event(), asyncio.Event()

    async def held(request: CompletionRequest) -> ProviderReply:
        busy.set()
        await release.wait()
        return reply("first answer")

    provider = ScriptedProvider([held], when_exhausted=reply("later answer"))
    app = App(settings_for(fake, tmp_path), provider=provider, tools=[])
    async with app:
        channel = app.channels["discord.main"]
        await wait_for_health(channel, HealthState.CONNECTED)
        one, two, three = (said(fake, f"<@{BOT_ID}> {t}", mentions=[BOT]) for t in WORDS)
        await fake.dispatch("MESSAGE_CREATE", one)
        async with asyncio.timeout(10):
            await busy.wait()  # the session is busy: two and three wait in its queue
        for message in (two, three):
            await fake.dispatch("MESSAGE_CREATE", message)
        await inbox_until(app, two["id"], lambda e: e is not None)
        await inbox_until(app, three["id"], lambda e: e is not None)
        await fake.edit_message(two["id"], f"<@{BOT_ID}> two, edited")
        await fake.delete_message(three["id"])
        await inbox_until(app, two["id"], lambda e: e is not None and "edited" in e.payload)
        await inbox_until(app, three["id"], lambda e: e is not None and e.status == "failed")
        release.set()
        await fake.wait_until(lambda: "later answer" in fake.posted(GENERAL))
    asked = [r.messages[-1].content for r in provider.requests]
    assert asked == ["one", "two, edited"]
    assert fake.posted(GENERAL).count("later answer") == 1


WORDS = ("one", "two", "three")


async def inbox_until(
    app: App, message_id: str, holds: Callable[[InboxEntry | None], bool]
) -> None:
    key = InboxKey(channel="discord.main", message_id=message_id)
    async with asyncio.timeout(10):
        # The inbox has no change notification, so it is polled.
        while not holds(await app.store.inbox.get(key)):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
