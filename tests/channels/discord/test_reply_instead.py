"""Deny with a reply on Discord, and stale cards, with the real discord.py against the fake.

"✏️ Reply instead" answers with a modal (callback type 9); its submission (MODAL_SUBMIT over the
gateway) reaches the host as a DENY with the text and is answered ephemerally. Empty replies
are refused. Every answer names the card it came from, and the adapter never edits it itself;
through the real approval service on a SQLite file, an answer on a request that is no longer
open turns that card into the request's outcome (also a card left behind by a crash).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.approval.card import card_for
from bot.channel import ApprovalChoice, ClickVerdict, SentMessage
from bot.envelope import DeliveryTarget
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.audit import Decision
from channels.discord.adapter import DiscordChannel
from channels.discord.cards import EMPTY_REPLY, FIELD_ID, render_card
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
    submit_reply,
)
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    APPROVER_ROLE,
    BOB,
    CAROL,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
)

pytestmark = pytest.mark.usefixtures("discord_env")

REPLY = "Use the staging build instead; production is frozen today."


def card_message(channel: DiscordChannel, message_id: str) -> SentMessage:
    """A card in #general as an answer reports it."""
    target = DeliveryTarget(channel=channel.ref, conversation_id=GENERAL)
    return SentMessage(target=target, message_id=message_id)


# -- the modal -------------------------------------------------------------------------------


async def test_reply_button_opens_the_modal_without_deciding(
    fake: FakeDiscord, store: Store
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        callback = await click(fake, sent.message_id, "r", BOB)
    assert callback.body == {
        "type": 9,
        "data": {
            "custom_id": f"ap:{APPROVAL_ID}:r",
            "title": "Deny with a reply",
            "components": [
                {
                    "type": 18,
                    "label": "What should the assistant be told instead?",
                    "component": {
                        "type": 4,
                        "style": 2,  # paragraph
                        "label": None,
                        "custom_id": FIELD_ID,
                        "required": True,
                        "max_length": 2000,
                    },
                }
            ],
        },
    }
    assert host.clicks == []  # opening the dialog decides nothing


@pytest.mark.parametrize(
    ("presser", "pending", "told"),
    [
        (CAROL, [APPROVAL_ID], ClickVerdict.NOT_AUTHORISED.message),
        (BOB, [], ClickVerdict.UNKNOWN.message),
    ],
    ids=["stranger", "expired"],
)
async def test_reply_button_tells_a_refused_presser_at_once(
    fake: FakeDiscord, store: Store, presser: dict[str, str], pending: list[str], told: str
) -> None:
    """Instead of the modal, the ephemeral a refused click gets; nothing is reported."""
    host = RecordingHost(approvers=[BOB["id"]], pending=pending)
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        callback = await click(fake, sent.message_id, "r", presser)
    assert ephemeral_text(callback) == told
    assert host.clicks == []


@pytest.mark.parametrize("in_labels", [True, False])
async def test_approvers_reply_reaches_the_host_as_a_deny_with_the_text(
    fake: FakeDiscord, store: Store, in_labels: bool
) -> None:
    host = RecordingHost(approver_roles=["approvers"], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approver_roles=["approvers"])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        await click(fake, sent.message_id, "r", CAROL, [APPROVER_ROLE])
        callback = await submit_reply(
            fake, sent.message_id, REPLY, CAROL, [APPROVER_ROLE], in_labels=in_labels
        )
    [seen] = host.clicks
    assert (seen.approval_id, seen.choice, seen.user_id) == (
        APPROVAL_ID,
        ApprovalChoice.DENY,
        CAROL["id"],
    )
    assert seen.replacement_text == REPLY
    assert "approvers" in seen.user_roles
    assert ephemeral_text(callback) == ClickVerdict.ACCEPTED.message


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
async def test_an_empty_reply_is_refused_and_not_reported(
    fake: FakeDiscord, store: Store, text: str
) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        callback = await submit_reply(fake, sent.message_id, text, BOB)
    assert ephemeral_text(callback) == EMPTY_REPLY
    assert host.clicks == []


async def test_a_strangers_reply_is_not_authorised(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        callback = await submit_reply(fake, sent.message_id, REPLY, CAROL)
    assert [(c.user_id, c.replacement_text) for c in host.clicks] == [(CAROL["id"], REPLY)]
    assert ephemeral_text(callback) == ClickVerdict.NOT_AUTHORISED.message


async def test_a_dialog_opened_before_a_restart_still_counts_after_it(
    fake: FakeDiscord, store: Store
) -> None:
    before = make_channel(fake, store, approvers=[BOB["id"]])
    first_host = RecordingHost()
    async with running(before, first_host):
        envelope = await request_turn(fake, first_host)
        sent = await before.post_approval_card(envelope.reply_target, pending_card())
        await click(fake, sent.message_id, "r", BOB)  # the dialog is open when the bot stops
    after = make_channel(fake, store, approvers=[BOB["id"]])
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    async with running(after, host):
        callback = await submit_reply(fake, sent.message_id, REPLY, BOB)
    assert fake.identifies == 2
    assert [(c.choice, c.replacement_text) for c in host.clicks] == [(ApprovalChoice.DENY, REPLY)]
    assert ephemeral_text(callback) == ClickVerdict.ACCEPTED.message


# -- the card an answer came from ------------------------------------------------------------


@pytest.mark.parametrize("via", ["a", "d", "w", "reply"])
async def test_every_answer_names_the_card_it_came_from(
    fake: FakeDiscord, store: Store, via: str
) -> None:
    """The adapter reports where the card is and leaves it alone: closing a card whose
    request is no longer open is the approval service's edit."""
    host = RecordingHost(approvers=[BOB["id"]], pending=[])  # the core knows no such request
    channel = make_channel(fake, store, approvers=[BOB["id"]])
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        if via == "reply":
            callback = await submit_reply(fake, sent.message_id, REPLY, BOB)
        else:
            callback = await click(fake, sent.message_id, via, BOB)
    assert ephemeral_text(callback) == ClickVerdict.UNKNOWN.message
    [seen] = host.clicks
    assert seen.card == card_message(channel, sent.message_id)
    assert fake.calls_to("PATCH", rf"/channels/{GENERAL}/messages/{sent.message_id}") == []


async def test_a_reaction_names_the_card_it_was_added_to(fake: FakeDiscord, store: Store) -> None:
    host = RecordingHost(approvers=[BOB["id"]], pending=[APPROVAL_ID])
    channel = make_channel(fake, store, approvers=[BOB["id"]], reactions_for_approval=True)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        sent = await channel.post_approval_card(envelope.reply_target, pending_card())
        await react(fake, sent.message_id, "✅", BOB)
        [seen] = await host.wait_clicks(1)
    assert (seen.approval_id, seen.choice) == (APPROVAL_ID, ApprovalChoice.APPROVE)
    assert seen.card == card_message(channel, sent.message_id)


# -- through the real approval service -------------------------------------------------------


async def test_service_takes_the_approvers_reply_after_refusing_a_stranger(
    fake: FakeDiscord, store: Store
) -> None:
    channel = make_channel(fake, store, approvers=[BOB["id"]], approver_roles=["approvers"])
    service = approval_service(fake, store, channel)
    host = ServiceHost(service)
    async with running(channel, host):
        envelope = await request_turn(fake, host)
        ask = asyncio.create_task(service.ask(shell_request(envelope)))
        await fake.wait_until(lambda: any(m["components"] for m in fake.messages.values()))
        card_id = next(m for m in fake.messages if fake.messages[m]["components"])
        [pending] = await store.approvals.list()
        approval_id = pending.id
        refused = await submit_reply(fake, card_id, "just run it", CAROL, approval_id=approval_id)
        assert ephemeral_text(refused) == ClickVerdict.NOT_AUTHORISED.message
        [still] = await store.approvals.list()
        assert still.status is ApprovalStatus.PENDING and still.reply is None

        accepted = await submit_reply(fake, card_id, REPLY, BOB, approval_id=approval_id)
        assert ephemeral_text(accepted) == ClickVerdict.ACCEPTED.message
        decision = await asyncio.wait_for(ask, 10)
        [edit] = await fake.wait_for_call("PATCH", rf"/channels/{GENERAL}/messages/{card_id}")
        again = await submit_reply(fake, card_id, "later", BOB, approval_id=approval_id)
        [_, shown_again] = await fake.wait_for_call(
            "PATCH", rf"/channels/{GENERAL}/messages/{card_id}", count=2
        )
    assert decision.verdict is Decision.EDITED and decision.replacement_text == REPLY
    assert decision.decided_by == BOB["id"]
    assert edit.body is not None and edit.body["components"] == []
    assert edit.body["content"].startswith("**✏️ Denied with a reply: shell**")
    assert f"By: {BOB['id']}" in edit.body["content"]
    assert ephemeral_text(again) == ClickVerdict.ALREADY_DECIDED.message  # single use
    assert shown_again.body == edit.body  # a late answer re-shows the outcome, nothing else
    [record] = await store.approvals.list()
    assert record.status is ApprovalStatus.EDITED and record.reply == REPLY
    decisions = [(a.decided_by, a.decision) for a in await store.audit.since(0.0)]
    assert (CAROL["id"], "click_refused:deny") in decisions
    assert (BOB["id"], "edited") in decisions


async def test_card_left_by_a_crash_before_its_reference_was_stored_is_closed_by_a_click(
    fake: FakeDiscord, store: Store
) -> None:
    # The first process created the request and posted its card, then died before it
    # stored the card's reference: the core has no way to edit that card.
    before = make_channel(fake, store, approvers=[BOB["id"]])
    first_host = RecordingHost()
    async with running(before, first_host):
        envelope = await request_turn(fake, first_host)
        request = shell_request(envelope)
        now = time.time()
        record = ApprovalRecord(
            id=APPROVAL_ID,
            channel=str(before.ref),
            conversation_id=envelope.conversation_id,
            thread_id=envelope.thread_id,
            session_key=request.turn.session_key,
            requester=envelope.sender.id,
            requester_name=envelope.sender.display_name,
            tool="shell",
            fingerprint=request.fingerprint,
            summary=("command: rm -rf build",),
            ask_reason="it has side effects",
            created_at=now,
            expires_at=now + 30,
        )
        await store.approvals.create(record)
        sent = await before.post_approval_card(
            envelope.reply_target, card_for(record, timeout_s=30)
        )
    after = make_channel(fake, store, approvers=[BOB["id"]])
    service = approval_service(fake, store, after)
    host = ServiceHost(service)
    async with running(after, host):
        assert await service.expire_pending() == 1
        assert fake.messages[sent.message_id]["components"]  # the core could not reach it
        callback = await click(fake, sent.message_id, "a", BOB)
        [edit] = await fake.wait_for_call(
            "PATCH", rf"/channels/{GENERAL}/messages/{sent.message_id}"
        )
    assert ephemeral_text(callback) == ClickVerdict.UNKNOWN.message
    [expired] = await store.approvals.list()
    assert expired.status is ApprovalStatus.EXPIRED
    # The card shows the request's real outcome, as the core's own edit would have.
    assert edit.body is not None and edit.body["components"] == []
    assert edit.body["content"] == render_card(card_for(expired, timeout_s=30)).content
    assert edit.body["content"].startswith("**⌛ Expired: shell**")
