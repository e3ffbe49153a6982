"""Approval cards on Discord with the real discord.py against a recording host: what only
Discord has. The card's buttons carry only the payload; a click through INTERACTION_CREATE
carries the clicker's guild roles (an approver by role) and is answered with a deferral or
an ephemeral refusal; people's reactions are reported and the bot's own are not, also on a
card from before a restart. The rest of a card's life is in ``tests/channels/contract``."""

from __future__ import annotations

import pytest

from bot.channel import (
    ApprovalChoice,
    ClickVerdict,
)
from bot.store import Store
from tests.fakes.discord_approvals import (
    APPROVAL_ID,
    click,
    ephemeral_text,
    pending_card,
    react,
    request_turn,
)
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    APPROVER_ROLE,
    BOB,
    BOT,
    CAROL,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
)

pytestmark = pytest.mark.usefixtures("discord_env")


# -- adapter level ---------------------------------------------------------------------------


async def test_card_carries_four_buttons_with_only_the_approval_id(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
    message = fake.messages[sent.message_id]
    buttons = [c for row in message["components"] for c in row["components"]]
    assert [(b["label"], b["custom_id"]) for b in buttons] == [
        ("Approve", f"ap:{APPROVAL_ID}:a"),
        ("Deny", f"ap:{APPROVAL_ID}:d"),
        ("Always", f"ap:{APPROVAL_ID}:w"),
        ("✏️ Reply instead", f"ap:{APPROVAL_ID}:r"),
    ]
    assert message["content"].startswith("**🔐 Approval needed: shell**\n")
    assert "command: rm -rf build" in message["content"]


@pytest.mark.parametrize(
    ("user", "roles", "choice", "accepted"),
    [
        (ALICE, [], "a", False),  # not an approver
        (BOB, [], "a", True),  # approver by user id
        (BOB, [], "d", True),
        (BOB, [], "w", True),
        (CAROL, [APPROVER_ROLE], "a", True),  # approver by guild role
    ],
)
async def test_button_click_reaches_the_host_and_is_answered(
    fake: FakeDiscord, store: Store, user: JSON, roles: list[str], choice: str, accepted: bool
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], approver_roles=["approvers"], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        callback = await click(fake, sent.message_id, choice, user, roles)
    [seen] = host.clicks
    expected = {"a": ApprovalChoice.APPROVE, "d": ApprovalChoice.DENY, "w": ApprovalChoice.ALWAYS}
    assert (seen.approval_id, seen.choice, seen.user_id) == (
        APPROVAL_ID,
        expected[choice],
        user["id"],
    )
    assert seen.channel == channel.ref
    if roles:
        assert APPROVER_ROLE in seen.user_roles and "approvers" in seen.user_roles
    if accepted:
        assert callback.body == {"type": 6}  # deferred update: the card edit follows
    else:
        assert ephemeral_text(callback) == ClickVerdict.NOT_AUTHORISED.message


async def test_reactions_from_people_reach_the_host_and_the_bots_own_do_not(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]], reactions_for_approval=True)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.cards.post_approval_card(envelope.reply_target, pending_card())
        added = await fake.wait_for_call(
            "PUT", rf"/channels/{GENERAL}/messages/{sent.message_id}/reactions/.+/@me", count=3
        )
        await react(fake, sent.message_id, "✅", BOT)  # the bot's own affordance
        await react(fake, sent.message_id, "👍", BOB)  # not a decision emoji
        await react(fake, sent.message_id, "❌", ALICE)
        await react(fake, sent.message_id, "✅", BOB)
        clicks = await host.wait_clicks(2)
    assert len(added) == 3
    assert [(c.user_id, c.choice) for c in clicks] == [
        (ALICE["id"], ApprovalChoice.DENY),
        (BOB["id"], ApprovalChoice.APPROVE),
    ]


async def test_reaction_on_a_card_from_before_a_restart_is_routed(
    fake: FakeDiscord, store: Store
) -> None:
    before = make_channel(fake, store, reactions_for_approval=True)
    first_host = RecordingHost()
    async with running(before, first_host):
        envelope = await request_turn(fake, first_host)
        sent = await before.cards.post_approval_card(envelope.reply_target, pending_card())
    after = make_channel(fake, store, reactions_for_approval=True)
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    async with running(after, host):
        await react(fake, sent.message_id, "✅", BOB)
        [seen] = await host.wait_clicks(1)
    assert (seen.approval_id, seen.choice) == (APPROVAL_ID, ApprovalChoice.APPROVE)
