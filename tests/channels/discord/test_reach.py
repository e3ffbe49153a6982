"""No card that nobody can answer, on Discord: the whole daemon behind the real discord.py
against the loopback fake.

An approver sees a conversation when they are in the guild and the channel's permissions
give them View Channel (a thread: its parent's; a private thread: its members). A mention
where the approver cannot see is refused at once, no card posted, the model told why; where
they can, the card is posted and their click runs the tool; when Discord cannot answer, the
card is posted anyway. A DM from a non-approver with ``dm_approvers`` on reaches the
approver's DM (opened by the adapter, the copy edited there) or, when they closed their DMs
(403, code 50007), ends at once with the DM's own card expired.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import pytest

from bot.app import App
from bot.approval.reasons import RuntimeReason
from bot.channel import HealthState
from bot.envelope import DeliveryTarget
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from channels.discord.adapter import DiscordChannel
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_approvals import click
from tests.fakes.discord_payloads import JSON, FakeGuild, visible_only_to
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    APPROVER_ROLE,
    BOB,
    BOT,
    BOT_ID,
    CAROL,
    DM,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
    settings_for,
)
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

pytestmark = pytest.mark.usefixtures("discord_env")

THREAD = "800000000000000011"
NOBODY_SEES = "no approver can see this conversation"
Setup = Callable[[FakeDiscord, FakeGuild], str]  # arranges the guild; returns where to ask


@pytest.fixture
def guild(fake: FakeDiscord) -> FakeGuild:
    fake.people.users.update({u["id"]: u for u in (ALICE, BOB, CAROL)})
    return fake.guilds[0]


def _deploy_then(answer: str) -> ScriptedProvider:
    return ScriptedProvider([reply("", call("deploy", {"version": "v2"})), reply(answer)])


def _tool_result(provider: ScriptedProvider) -> str:
    (tool,) = [m for m in provider.requests[1].messages if m.role == "tool"]
    return str(tool.content)


def _cards(fake: FakeDiscord) -> list[JSON]:
    return [m for m in fake.messages.values() if m["components"]]


@pytest.fixture
async def app_for(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[Callable[..., App]]:
    """Builds the daemon; the test enters it."""

    def build(
        provider: ScriptedProvider, ran: list[Mapping[str, object]], **approval: object
    ) -> App:
        return App(
            settings_for(fake, tmp_path, **approval), provider=provider, tools=[deploy_tool(ran)]
        )

    yield build


async def _connected(app: App) -> DiscordChannel:
    channel = app.channels["discord.main"]
    assert isinstance(channel, DiscordChannel)
    await wait_for_health(channel, HealthState.CONNECTED)
    return channel


# -- where the approver cannot see: refused at once ----------------------------------------------


def _not_in_the_guild(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: []}
    return GENERAL


def _channel_hidden_from_them(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    guild.overwrites[GENERAL] = visible_only_to(guild, APPROVER_ROLE, ALICE["id"])
    return GENERAL


def _private_thread_without_them(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    guild.threads[THREAD] = (GENERAL, ALICE["id"])
    guild.private_threads[THREAD] = {ALICE["id"], BOT_ID}
    return THREAD


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param(_not_in_the_guild, id="not in the guild"),
        pytest.param(_channel_hidden_from_them, id="the channel is hidden from them"),
        pytest.param(_private_thread_without_them, id="a private thread they are not in"),
    ],
)
async def test_where_no_approver_can_see_the_call_is_refused_at_once(
    fake: FakeDiscord, guild: FakeGuild, app_for: Callable[..., App], setup: Setup
) -> None:
    where = setup(fake, guild)
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("I cannot deploy from here.")
    async with app_for(provider, ran) as app:
        await _connected(app)
        asked = said(fake, f"<@{BOT_ID}> deploy v2", mentions=[BOT], channel_id=where)
        await fake.dispatch("MESSAGE_CREATE", asked)
        await fake.wait_until(lambda: "I cannot deploy from here." in fake.posted(where))
        rows = await app.store.audit.since()
    assert ran == []
    assert _cards(fake) == []
    assert NOBODY_SEES in _tool_result(provider)
    assert [(r.decision, r.reason) for r in rows] == [("auto_denied", "no approver reachable")]


# -- where an approver can see, or Discord cannot tell: a card -----------------------------------


def _a_member(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    return GENERAL


def _the_approver_role_sees_a_hidden_channel(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: [APPROVER_ROLE]}
    guild.overwrites[GENERAL] = visible_only_to(guild, APPROVER_ROLE, ALICE["id"])
    return GENERAL


def _a_public_thread(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    guild.threads[THREAD] = (GENERAL, ALICE["id"])
    return THREAD


def _a_private_thread_they_are_in(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    guild.threads[THREAD] = (GENERAL, ALICE["id"])
    guild.private_threads[THREAD] = {ALICE["id"], BOB["id"], BOT_ID}
    return THREAD


def _discord_fails(fake: FakeDiscord, guild: FakeGuild) -> str:
    guild.members = {ALICE["id"]: []}  # would say "not a member", but the question fails
    fake.failing[r"/guilds/\d+/members/\d+"] = 503
    return GENERAL


@pytest.mark.parametrize(
    "setup",
    [
        pytest.param(_a_member, id="a member"),
        pytest.param(_the_approver_role_sees_a_hidden_channel, id="a role sees a hidden channel"),
        pytest.param(_a_public_thread, id="a public thread"),
        pytest.param(_a_private_thread_they_are_in, id="a private thread they are in"),
        pytest.param(_discord_fails, id="discord cannot answer"),
    ],
)
async def test_where_an_approver_may_see_the_card_is_posted_and_answered(
    fake: FakeDiscord, guild: FakeGuild, app_for: Callable[..., App], setup: Setup
) -> None:
    where = setup(fake, guild)
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("Deployed v2.")
    async with app_for(provider, ran) as app:
        await _connected(app)
        asked = said(fake, f"<@{BOT_ID}> deploy v2", mentions=[BOT], channel_id=where)
        await fake.dispatch("MESSAGE_CREATE", asked)
        await fake.wait_until(lambda: bool(_cards(fake)))
        (card,) = _cards(fake)
        assert card["channel_id"] == where
        await click(
            fake, card["id"], "a", BOB, roles=guild.members and guild.members.get(BOB["id"])
        )
        await fake.wait_until(lambda: "Deployed v2." in fake.posted(where))
    assert ran == [{"version": "v2"}]
    assert fake.calls_to("GET", rf"/guilds/{guild.id}/members/{BOB['id']}")


# -- a DM from someone who may not approve -------------------------------------------------------


@pytest.mark.parametrize("dm_open", [True, False], ids=["dm open", "dm closed (50007)"])
async def test_a_dm_reaches_the_approver_by_dm_or_ends_at_once(
    fake: FakeDiscord, guild: FakeGuild, app_for: Callable[..., App], dm_open: bool
) -> None:
    if not dm_open:
        fake.people.closed_dms.add(BOB["id"])
    ran: list[Mapping[str, object]] = []
    provider = _deploy_then("That is all I can do.")
    async with app_for(provider, ran, dm_approvers=True) as app:
        await _connected(app)
        await fake.dispatch("MESSAGE_CREATE", said(fake, "deploy v2", channel_id=DM))
        # the requester's DM: a notice that it waits, no card with buttons they cannot use
        await fake.wait_until(lambda: any("waits for an approver" in t for t in fake.posted(DM)))
        assert not [c for c in _cards(fake) if c["channel_id"] == DM]
        if dm_open:
            await fake.wait_until(lambda: len(_cards(fake)) == 1)
            bob_dm = fake.people.dm_of(BOB["id"])
            (copy,) = [c for c in _cards(fake) if c["channel_id"] == bob_dm]
            assert f"Asked in: discord.main {DM}" in copy["content"]
            await click(fake, copy["id"], "a", BOB)
        await fake.wait_until(lambda: "That is all I can do." in fake.posted(DM))
        (row,) = await app.store.approvals.list()
    # the copy was first tried at the user's id, which is no channel, then in their DM
    assert fake.calls_to("POST", rf"/channels/{BOB['id']}/messages")
    assert fake.calls_to("POST", r"/users/@me/channels")
    edited = {c.path.split("/")[2] for c in fake.calls_to("PATCH", r"/channels/\d+/messages/\d+")}
    if dm_open:
        assert ran == [{"version": "v2"}]
        assert row.status is ApprovalStatus.APPROVED
        assert fake.people.dm_of(BOB["id"]) in edited  # the copy, to its outcome
        return
    assert ran == []
    assert row.status is ApprovalStatus.EXPIRED
    assert row.reason == RuntimeReason.NOBODY_REACHABLE
    assert NOBODY_SEES in _tool_result(provider)
    assert _cards(fake) == []


# -- the adapter's answers, one by one -----------------------------------------------------------


async def test_the_adapter_answers_for_dms_threads_not_yet_open_and_unknown_places(
    fake: FakeDiscord, guild: FakeGuild, store: Store
) -> None:
    guild.members = {ALICE["id"]: [], BOB["id"]: []}
    fake.people.dm_channels["800000000000000041"] = BOB["id"]
    channel = make_channel(fake, store)

    def target(conversation: str, thread: str | None = None) -> DeliveryTarget:
        return DeliveryTarget(channel=channel.ref, conversation_id=conversation, thread_id=thread)

    async with running(channel, RecordingHost()):
        bob_dm = target("800000000000000041")
        assert await channel.members.can_see(bob_dm, BOB["id"]) is True
        assert await channel.members.can_see(bob_dm, ALICE["id"]) is False
        # thread_per_request: the thread is named after the message and opened later
        pending = target(GENERAL, "800000000000000099")
        assert await channel.members.can_see(pending, BOB["id"]) is True
        assert await channel.members.can_see(pending, CAROL["id"]) is False  # not in the guild
        assert await channel.members.can_see(target("800000000000000098"), BOB["id"]) is None
        assert await channel.members.can_see(target(GENERAL), "U_NOT_A_SNOWFLAKE") is False
