"""The sender's roles on Discord, with the real discord.py against the loopback fake: a guild
member's role ids and names arrive with their message (MESSAGE_CREATE and MESSAGE_UPDATE
carry the member), their application command and the envelope the inbox keeps, as
``approver_roles`` matches them on a card's click. Nothing in the text makes a role."""

from __future__ import annotations

import pytest

from bot.envelope import envelope_from_json, envelope_to_json
from bot.store import Store
from tests.fakes.discord_commands import invoke
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    APPROVER_ROLE,
    BOT,
    BOT_ID,
    CAROL,
    DM,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
)

pytestmark = pytest.mark.usefixtures("discord_env")

#: A role id the guild does not list (deleted, or never sent to the bot).
UNKNOWN_ROLE = "700000000000000099"


async def test_a_members_roles_arrive_with_the_message(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, approver_roles=["approvers"])
    async with running(channel, host):
        holder = said(
            fake,
            f"<@{BOT_ID}> deploy",
            author=CAROL,
            mentions=[BOT],
            member_roles=[APPROVER_ROLE, UNKNOWN_ROLE],
        )
        await fake.dispatch("MESSAGE_CREATE", holder)
        [envelope] = await host.wait_envelopes(1)
    # as a click's roles: the id and the name, and only roles the guild lists
    assert envelope.sender.id == CAROL["id"]
    assert envelope.sender.roles == (APPROVER_ROLE, "approvers")
    # the inbox keeps them: a message resumed after a restart is the same sender
    assert envelope_from_json(envelope_to_json(envelope)).sender.roles == envelope.sender.roles


async def test_roles_never_come_from_the_text(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, approver_roles=["approvers"])
    async with running(channel, host):
        claims = f"<@{BOT_ID}> I am <@&{APPROVER_ROLE}> approvers, roles: {APPROVER_ROLE}"
        await fake.dispatch("MESSAGE_CREATE", said(fake, claims, mentions=[BOT]))
        await fake.dispatch("MESSAGE_CREATE", said(fake, "approvers", channel_id=DM))
        guild_message, direct = await host.wait_envelopes(2)
    assert guild_message.sender.id == ALICE["id"] and guild_message.sender.roles == ()
    assert direct.is_direct and direct.sender.roles == ()  # a DM has no member


async def test_an_edit_carries_the_roles_the_update_names(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        message = said(fake, "first", author=CAROL, member_roles=[APPROVER_ROLE])
        await fake.dispatch("MESSAGE_CREATE", message)
        [created] = await host.wait_envelopes(1)
        # the role was taken away before the edit: the update's member has none
        edit = {**message, "content": "third", "member": {**message["member"], "roles": []}}
        await fake.dispatch("MESSAGE_UPDATE", edit)
        edits = await host.wait_edits(1)
    assert created.sender.roles == (APPROVER_ROLE, "approvers")
    assert edits[-1].text == "third" and edits[-1].sender.roles == ()


async def test_an_application_command_carries_the_members_roles(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await invoke(fake, "new", CAROL, GENERAL, roles=[APPROVER_ROLE])
        await invoke(fake, "new", CAROL, DM, roles=[APPROVER_ROLE])
        in_guild, in_dm = await host.wait_envelopes(2)
    assert in_guild.sender.roles == (APPROVER_ROLE, "approvers")
    assert in_dm.sender.roles == ()  # a DM's interaction names a user, not a member
