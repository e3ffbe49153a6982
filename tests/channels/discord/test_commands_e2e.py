"""End to end: Discord's chat commands through the whole daemon (the gateway's command
router, access policy, sessions) and the real discord.py against the loopback fake.

Only :data:`ALICE` may talk to the bot (``settings_for``). ``/id`` and ``/help`` are answered
to anyone, through the interaction; ``/stop`` in a thread stops the slow turn running there
and nothing elsewhere; a stranger's ``/new`` gets silence and its "thinking…" is removed; a
command the rate limits refuse is acknowledged at once and its user told privately, once;
the text forms (``/new`` in a DM, ``@bot stop`` in a server) are answered as channel
messages. A command never reaches the model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.channel import HealthState
from bot.config.limits import RateLimit, RateLimitsConfig
from bot.gateway.commands import NEW_SESSION, NOTHING_RUNNING
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_commands import invoke
from tests.fakes.discord_interactions import EPHEMERAL
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    BOT,
    BOT_ID,
    CAROL,
    DM,
    GENERAL,
    said,
    settings_for,
)
from tests.fakes.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.usefixtures("discord_env")

THREAD = "800000000000000011"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """One guild: #general with a thread alice started."""
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"}, threads={THREAD: (GENERAL, ALICE["id"])})
        yield server


async def started(app: App) -> None:
    await wait_for_health(app.channels["discord.main"], HealthState.CONNECTED)


def answer_of(fake: FakeDiscord, interaction_id: str) -> str:
    [message] = fake.follow_ups[interaction_id]
    return str(message["content"])


async def test_id_tells_anyone_their_user_id_and_the_chat_id(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    provider = ScriptedProvider()
    async with App(settings_for(fake, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        stranger, deferral = await invoke(fake, "id", CAROL, GENERAL)
        in_thread, _ = await invoke(fake, "id", ALICE, THREAD)
        await fake.wait_until(lambda: {stranger, in_thread} <= fake.follow_ups.keys())
    assert deferral.body == {"type": 5, "data": {"flags": EPHEMERAL}}
    told = answer_of(fake, stranger)
    assert f"Your user id: {CAROL['id']}" in told and f"This chat: {GENERAL}" in told
    assert "discord.main" in told and "thread" not in told.split("\n")[1]
    assert fake.follow_ups[stranger][0]["flags"] == EPHEMERAL  # only carol sees it
    assert f"This chat: {GENERAL} (thread {THREAD})" in answer_of(fake, in_thread)
    assert provider.requests == []


async def test_help_in_a_dm_lists_the_commands(fake: FakeDiscord, tmp_path: Path) -> None:
    provider = ScriptedProvider()
    async with App(settings_for(fake, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        interaction_id, _ = await invoke(fake, "help", ALICE, DM)
        await fake.wait_until(lambda: interaction_id in fake.follow_ups)
    listed = answer_of(fake, interaction_id)
    assert all(f"/{name} — " in listed for name in ("new", "stop", "id", "help"))
    assert provider.requests == []


async def test_stop_in_a_thread_cancels_the_turn_running_there(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    running, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(_request: CompletionRequest) -> ProviderReply:
        running.set()
        try:
            await asyncio.Event().wait()  # a model that never finishes on its own
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    provider = ScriptedProvider([slow])
    async with App(settings_for(fake, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        request = said(fake, f"<@{BOT_ID}> count to a million", channel_id=THREAD, mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", request)
        await asyncio.wait_for(running.wait(), 10)

        elsewhere, _ = await invoke(fake, "stop", ALICE, GENERAL)  # another session
        await fake.wait_until(lambda: elsewhere in fake.follow_ups)
        assert answer_of(fake, elsewhere) == NOTHING_RUNNING
        assert not cancelled.is_set()

        here, deferral = await invoke(fake, "stop", ALICE, THREAD)
        await asyncio.wait_for(cancelled.wait(), 10)
        await fake.wait_until(lambda: CANCELLED_MESSAGE in fake.posted(THREAD))
        await fake.wait_until(lambda: here in fake.deleted_responses or here in fake.follow_ups)
    # private: the thread sees it was stopped from the stopped turn itself
    assert deferral.body == {"type": 5, "data": {"flags": EPHEMERAL}}
    assert len(provider.requests) == 1


async def test_new_for_a_member_and_silence_for_a_stranger(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    provider = ScriptedProvider()
    async with App(settings_for(fake, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        member, _ = await invoke(fake, "new", ALICE, GENERAL)
        stranger, _ = await invoke(fake, "new", CAROL, GENERAL)
        await fake.wait_until(lambda: member in fake.follow_ups)
        await fake.wait_until(lambda: stranger in fake.deleted_responses)
    [shown] = fake.follow_ups[member]
    assert shown["content"] == NEW_SESSION and shown["channel_id"] == GENERAL
    assert stranger not in fake.follow_ups  # a refused group message is not answered
    assert provider.requests == []


async def test_text_forms_are_answered_in_the_channel(fake: FakeDiscord, tmp_path: Path) -> None:
    provider = ScriptedProvider()
    async with App(settings_for(fake, tmp_path), provider=provider, tools=[]) as app:
        await started(app)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "/NEW", channel_id=DM))
        await fake.wait_until(lambda: fake.posted(DM) == [NEW_SESSION])
        mention = said(fake, f"<@{BOT_ID}> stop", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", mention)
        await fake.wait_until(lambda: fake.posted(GENERAL) == [NOTHING_RUNNING])
    [reply] = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert reply.body is not None
    assert reply.body["message_reference"]["message_id"] == int(mention["id"])
    assert fake.follow_ups == {}
    assert provider.requests == []


async def test_a_refused_command_is_acknowledged_in_time_and_told_privately(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    # one command or message per ten minutes: nothing refills while the test runs
    limits = RateLimitsConfig(per_user=RateLimit(messages_per_minute=0.1, burst=1))
    limited = settings_for(fake, tmp_path).model_copy(update={"rate_limits": limits})
    provider = ScriptedProvider()
    async with App(limited, provider=provider, tools=[]) as app:
        await started(app)
        answered, _ = await invoke(fake, "new", ALICE, GENERAL)
        await fake.wait_until(lambda: answered in fake.follow_ups)
        told, told_deferral = await invoke(fake, "new", ALICE, GENERAL)
        await fake.wait_until(lambda: told in fake.follow_ups)
        quiet, quiet_deferral = await invoke(fake, "forget", ALICE, GENERAL)
        await fake.wait_until(lambda: quiet in fake.deleted_responses)
    assert answer_of(fake, answered) == NEW_SESSION
    # acknowledged at once, privately, like every command in a server
    assert told_deferral.body == quiet_deferral.body == {"type": 5, "data": {"flags": EPHEMERAL}}
    [notice] = fake.follow_ups[told]
    assert notice["content"].startswith("You're sending messages faster than I can take them")
    assert notice["flags"] == EPHEMERAL and fake.ephemerals[told] == [notice]
    assert quiet not in fake.follow_ups  # told once a minute; its "thinking…" removed
    assert fake.posted(GENERAL) == []
    assert app.gateway.rate_limited == 2 and provider.requests == []
