"""Approval cards on Discord with the real discord.py: persistent buttons, clicks through
INTERACTION_CREATE, ephemeral refusals, reactions, and cards from before a restart — first
against a recording host, then through the real approval service (audit included)."""

from __future__ import annotations

import asyncio
import copy
import dataclasses

import pytest

from bot.channel import (
    ApprovalChoice,
    CardState,
    ClickVerdict,
)
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.service_host import ServiceHost
from tests.fakes.discord_approvals import (
    APPROVAL_ID,
    approval_service,
    click,
    ephemeral_text,
    pending_card,
    react,
    request_turn,
    shell_request,
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
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
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
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
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


async def test_decided_card_shows_the_outcome_without_buttons(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        decided = dataclasses.replace(pending_card(), state=CardState.APPROVED, decided_by="bob")
        await channel.update_approval_card(sent, decided)
        [edit] = await fake.wait_for_call(
            "PATCH", rf"/channels/{GENERAL}/messages/{sent.message_id}"
        )
    assert edit.body is not None and edit.body["components"] == []
    assert (
        edit.body["content"].startswith("**✅ Approved: shell**")
        and "By: bob" in edit.body["content"]
    )


@pytest.mark.parametrize("still_pending", [True, False])
async def test_card_posted_before_a_restart_is_routed_after_it(
    fake: FakeDiscord, store: Store, still_pending: bool
) -> None:
    before = make_channel(fake, store, approvers=[BOB["id"]])
    first_host = RecordingHost()
    async with running(before, first_host):
        envelope = await request_turn(fake, first_host)
        sent = await before.post_approval_card(envelope.reply_target, pending_card())
    after = make_channel(fake, store, approvers=[BOB["id"]])  # a new process, a new client
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID] if still_pending else [])
    async with running(after, host):
        callback = await click(fake, sent.message_id, "a", BOB)
    assert fake.identifies == 2
    assert [c.approval_id for c in host.clicks] == [APPROVAL_ID]
    if still_pending:
        assert callback.body == {"type": 6}
    else:
        assert ephemeral_text(callback) == ClickVerdict.UNKNOWN.message


async def test_reactions_from_people_reach_the_host_and_the_bots_own_do_not(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]], reactions_for_approval=True)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
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
        sent = await before.post_approval_card(envelope.reply_target, pending_card())
    after = make_channel(fake, store, reactions_for_approval=True)
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    async with running(after, host):
        await react(fake, sent.message_id, "✅", BOB)
        [seen] = await host.wait_clicks(1)
    assert (seen.approval_id, seen.choice) == (APPROVAL_ID, ApprovalChoice.APPROVE)


# -- through the real approval service -------------------------------------------------------


@pytest.mark.parametrize("via", ["button", "reaction"])
async def test_service_refuses_and_audits_a_stranger_then_takes_the_approver(
    fake: FakeDiscord, store: Store, via: str
) -> None:
    channel = make_channel(
        fake,
        store,
        approvers=[BOB["id"]],
        approver_roles=["approvers"],
        reactions_for_approval=True,
    )
    service = approval_service(fake, store, channel)
    host = ServiceHost(service)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        assert envelope.capabilities.approval_backchannel
        ask = asyncio.create_task(service.ask(shell_request(envelope)))
        [card_call] = await fake.wait_for_call("POST", rf"/channels/{GENERAL}/messages")
        card_id = next(m for m in fake.messages if fake.messages[m]["components"])
        del card_call
        if via == "button":
            refused = await click(fake, card_id, "a", CAROL)  # no role, not listed
            assert ephemeral_text(refused) == ClickVerdict.NOT_AUTHORISED.message
            accepted = await click(fake, card_id, "a", BOB)
            assert accepted.body == {"type": 6}
        else:
            await react(fake, card_id, "✅", CAROL)
            await host.wait_clicks(1)
            await react(fake, card_id, "✅", BOB)
        decision = await asyncio.wait_for(ask, 10)
        [edit] = await fake.wait_for_call("PATCH", rf"/channels/{GENERAL}/messages/{card_id}")
    assert decision.verdict is Decision.APPROVED and decision.decided_by == BOB["id"]
    assert edit.body is not None and edit.body["components"] == []
    assert "Approved: shell" in edit.body["content"]
    audit = await store.audit.since(0.0)
    decisions = [(a.decided_by, a.decision) for a in audit]
    assert (CAROL["id"], "click_refused:approve") in decisions
    assert any(by == BOB["id"] and "approved" in what for by, what in decisions)


async def test_card_left_pending_by_a_crash_is_expired_and_later_clicks_say_so(
    fake: FakeDiscord, store: Store
) -> None:
    before = make_channel(fake, store, approvers=[BOB["id"]])
    first_service = approval_service(fake, store, before)
    first_host = ServiceHost(first_service)
    async with running(before, first_host):
        envelope = await request_turn(fake, first_host)
        ask = asyncio.create_task(first_service.ask(shell_request(envelope)))
        await fake.wait_for_call("POST", rf"/channels/{GENERAL}/messages")
        card_id = next(m for m in fake.messages if fake.messages[m]["components"])
        stale = copy.deepcopy(fake.messages[card_id])  # what an idle client keeps showing
        async with asyncio.timeout(10):
            # card refs are written after the post returns; wait until they are stored
            while not any(r.card_refs for r in await store.approvals.list()):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
    # The first process is gone (its channel is down); a new one starts on the same store.
    after = make_channel(fake, store, approvers=[BOB["id"]])
    service = approval_service(fake, store, after)
    host = ServiceHost(service)
    async with running(after, host):
        expired = await service.expire_pending()
        [edit] = await fake.wait_for_call("PATCH", rf"/channels/{GENERAL}/messages/{card_id}")
        callback = await click(fake, card_id, "a", BOB, as_seen=stale)
    decision = await asyncio.wait_for(ask, 10)
    assert expired == 1 and not decision.allowed
    assert edit.body is not None and edit.body["components"] == []
    assert "Expired: shell" in edit.body["content"]
    assert ephemeral_text(callback) == ClickVerdict.UNKNOWN.message
