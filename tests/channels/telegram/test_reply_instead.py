"""Replies to a card on Telegram, through the real python-telegram-bot: what only Telegram
has. Its reply form is a reply to the card, so a reply is an approval answer, never a message
for the agent — the bot's ``@username`` taken out of it, consumed whoever sends it, found
through the persisted card index (also after a restart, when the reply no longer carries the
keyboard) or the card's own keyboard, and a sticker changes nothing. A tap from a stale
screen names no card. What every platform does alike (reply instead by an approver, a
stranger, blank, after the decision or a restart) is in ``tests/channels/contract``.

"Not delivered" is checked with a later message in the same chat: updates are handled in
order, so when that one arrives first, the reply was not delivered.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bot.approval.gate import ApprovalRequest
from bot.approval.service import ApprovalService
from bot.channel import ApprovalCard, ApprovalChoice, CardState, ClickVerdict, SentMessage
from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.store import Store
from bot.store.approvals import ApprovalRecord
from bot.turn import TurnIdentity
from channels.telegram.adapter import TelegramChannel
from channels.telegram.card_surface import EMPTY_REPLY
from tests.approval.service_host import ServiceHost
from tests.fakes.approval_service import approval_service as service_over
from tests.fakes.channel_health import serving as running
from tests.fakes.recording_host import RecordingHost, Verdict, approver_verdict
from tests.fakes.telegram_server import (
    BOT_ID,
    JSON,
    FakeTelegram,
    callback,
    forum_chat,
    mention,
    message,
    reaction,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REF, REQUESTER, STRANGER, TOKEN, channel_for

GROUP = forum_chat(-100555)
TOPIC = 9
CARD = ApprovalCard(
    approval_id="apr-1",
    tool="shell",
    lines=("command: ls /tmp",),
    reason="shell is not auto-approved",
    requested_by="Ann",
)
_ids = iter(range(100, 10_000))


def pending_host(*pending: str) -> RecordingHost:
    return RecordingHost(approver_verdict(approvers=[str(APPROVER)], pending=pending or ["apr-1"]))


def said(sender: int, text: str, **extra: Any) -> JSON:
    """A message in the topic, with a fresh message id."""
    payload = message(GROUP, user(sender), text, message_id=next(_ids), thread_id=TOPIC, **extra)
    return {"message": payload}


async def post_card(
    tg: FakeTelegram, channel: TelegramChannel, host: RecordingHost
) -> tuple[SentMessage, JSON]:
    """The requester asks in the topic; the card is posted there. Returns the card as sent
    and as Telegram shows it (for replies and taps)."""
    await tg.push(said(REQUESTER, "@hatchbot clean up", entities=mention("@hatchbot clean up")))
    [env] = await host.wait_envelopes(1)
    sent = await channel.cards.post_approval_card(env.reply_target, CARD)
    number = int(sent.message_id.split(":")[1])
    return sent, tg.bot_message_now(int(GROUP["id"]), number)


async def later_message_arrives_first(tg: FakeTelegram, host: RecordingHost) -> None:
    await tg.push(said(REQUESTER, "@hatchbot next", entities=mention("@hatchbot next")))
    envelopes = await host.wait_envelopes(2)
    assert [e.text for e in envelopes] == ["clean up", "next"]


def approval_service(store: Store, channel: TelegramChannel) -> ApprovalService:
    config = {"allowed_users": ["*"], "approvers": [str(APPROVER)]}
    return service_over(store, channel, channel.ref, config)


def shell_request(envelope: IngressEnvelope) -> ApprovalRequest:
    return ApprovalRequest(
        tool="shell",
        arguments={"command": "ls /tmp"},
        call_id="call-1",
        turn=TurnIdentity(turn_id="turn-1", session_key="telegram.main:topic", envelope=envelope),
        requires_approval=True,
    )


def pending_record(envelope: IngressEnvelope) -> ApprovalRecord:
    """The row of :data:`CARD`, as the process that posted it left it."""
    request = shell_request(envelope)
    now = time.time()
    return ApprovalRecord(
        id=CARD.approval_id,
        channel=str(REF),
        conversation_id=envelope.conversation_id,
        thread_id=envelope.thread_id,
        session_key=request.turn.session_key,
        requester=envelope.sender.id,
        requester_name="Ann",
        tool="shell",
        fingerprint=request.fingerprint,
        summary=CARD.lines,
        ask_reason=CARD.reason,
        created_at=now,
        expires_at=now + 30,
    )


def card_edits(tg: FakeTelegram, card: JSON) -> list[str]:
    return [
        c.method
        for c in tg.calls
        if c.method in ("editMessageText", "editMessageReplyMarkup")
        and c.params["message_id"] == card["message_id"]
    ]


async def test_approver_reply_is_a_deny_with_that_text(tg: FakeTelegram, store: Store) -> None:
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        text = "@hatchbot use v3 instead, v2 is broken"
        reply = said(APPROVER, text, reply_to=card, entities=mention(text))
        await tg.push(reply)
        [click] = await host.wait_clicks(1)
        [ack] = await tg.wait_for("setMessageReaction")
        await later_message_arrives_first(tg, host)
    assert click.approval_id == "apr-1"
    assert click.choice is ApprovalChoice.DENY
    assert click.user_id == str(APPROVER)
    assert click.replacement_text == "use v3 instead, v2 is broken"
    assert ack.params["chat_id"] == GROUP["id"]
    assert ack.params["message_id"] == reply["message"]["message_id"]
    assert ack.params["reaction"] == [{"type": "emoji", "emoji": "👍"}]
    assert card_edits(tg, card) == []  # the approval service edits an accepted card


async def test_non_approver_reply_is_told_and_changes_nothing(
    tg: FakeTelegram, store: Store
) -> None:
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        reply = said(STRANGER, "no, run it anyway", reply_to=card)
        await tg.push(reply)
        [click] = await host.wait_clicks(1)
        [told] = await tg.wait_for(
            "sendMessage", lambda c: c.params.get("text") == ClickVerdict.NOT_AUTHORISED.message
        )
        await later_message_arrives_first(tg, host)
    assert (click.user_id, click.choice) == (str(STRANGER), ApprovalChoice.DENY)
    assert told.params["text"] == ClickVerdict.NOT_AUTHORISED.message
    assert told.params["reply_parameters"]["message_id"] == reply["message"]["message_id"]
    assert told.params["message_thread_id"] == TOPIC
    assert card_edits(tg, card) == []
    assert "reply_markup" in tg.bot_message_now(int(GROUP["id"]), card["message_id"])
    assert not tg.calls_of("setMessageReaction")


STICKER = {"file_id": "S1", "file_unique_id": "s1", "width": 1, "height": 1, "is_animated": False}


async def test_a_sticker_reply_is_refused(tg: FakeTelegram, store: Store) -> None:
    """A reply without text changes nothing, like a blank one (tests/channels/contract):
    an accidental sticker must not deny a call."""
    host = pending_host()
    channel = channel_for(tg, store)
    sticker = {**STICKER, "type": "regular", "is_video": False}
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        await tg.push(said(APPROVER, "", reply_to=card, sticker=sticker))
        [told] = await tg.wait_for("sendMessage", lambda c: c.params.get("text") == EMPTY_REPLY)
        await later_message_arrives_first(tg, host)
    assert told.params["message_thread_id"] == TOPIC
    assert host.clicks == []
    assert card_edits(tg, card) == []


async def test_a_tap_names_the_card_it_came_from(tg: FakeTelegram, store: Store) -> None:
    """The adapter reports where the card is and leaves it alone: closing a card whose
    request is no longer open is the approval service's edit."""
    host = pending_host("some-other-approval")
    channel = channel_for(tg, store)
    async with running(channel, host):
        sent, card = await post_card(tg, channel, host)
        await tg.push(callback("q-old", user(APPROVER, "Boss"), "ap:apr-1:a", card))
        [answer] = await tg.wait_for("answerCallbackQuery")
        # From a stale screen: the message Telegram sends has no buttons any more.
        without_keyboard = {k: v for k, v in card.items() if k != "reply_markup"}
        await tg.push(callback("q-stale", user(APPROVER, "Boss"), "ap:apr-1:a", without_keyboard))
        await tg.wait_for(
            "answerCallbackQuery", lambda c: c.params["callback_query_id"] == "q-stale"
        )
    assert answer.params["text"] == ClickVerdict.UNKNOWN.message
    assert answer.params["show_alert"] is True
    tapped, stale = host.clicks
    assert tapped.card == SentMessage(
        target=DeliveryTarget(channel=REF, conversation_id=str(GROUP["id"])),
        message_id=sent.message_id,
    )
    assert stale.card is None  # nothing left to close on that message
    assert card_edits(tg, card) == []


async def test_reply_after_restart_still_finds_the_card(tmp_path: Path) -> None:
    """The card index is in the database: after a restart a reply to an old card is still an
    approval answer. Its approval expired at the restart, which could not edit the card (a
    crash right after posting, before its place was stored); the reply's report lets the
    approval service show the card expired."""
    async with FakeTelegram(TOKEN) as tg:
        async with await Store.open(tmp_path / "state.db") as store:
            first = pending_host()
            channel = channel_for(tg, store)
            async with running(channel, first):
                _, card = await post_card(tg, channel, first)
            await store.approvals.create(pending_record(first.envelopes[0]))
        async with await Store.open(tmp_path / "state.db") as store:
            second = channel_for(tg, store)
            service = approval_service(store, second)
            host = ServiceHost(service)
            async with running(second, host):
                assert await service.expire_pending() == 1
                # Without the keyboard in the reply, only the persisted index knows the card.
                without_keyboard = {k: v for k, v in card.items() if k != "reply_markup"}
                reply = said(APPROVER, "use v3", reply_to=without_keyboard)
                await tg.push(reply)
                [click] = await host.wait_clicks(1)
                [told] = await tg.wait_for(
                    "sendMessage", lambda c: c.params.get("text") == ClickVerdict.UNKNOWN.message
                )
                [edit] = await tg.wait_for("editMessageText")
                await tg.push(said(REQUESTER, "@hatchbot next", entities=mention("@hatchbot next")))
                [env] = await host.wait_envelopes(1)
    assert (click.approval_id, click.replacement_text) == ("apr-1", "use v3")
    assert told.params["reply_parameters"]["message_id"] == reply["message"]["message_id"]
    assert edit.params["message_id"] == card["message_id"]
    assert edit.params["text"].startswith("<b>⌛ Expired: shell</b>")
    assert "reply_markup" not in tg.bot_message_now(int(GROUP["id"]), card["message_id"])
    assert env.text == "next"


async def test_card_missing_from_the_index_is_found_by_its_keyboard(
    tg: FakeTelegram, store: Store
) -> None:
    """A card whose index row was never written still names its approval in its buttons."""
    host = pending_host()
    channel = channel_for(tg, store)
    keyboard = {
        "inline_keyboard": [
            [{"text": "✅ Approve", "callback_data": "ap:apr-1:a"}],
            [{"text": "✏️ Reply instead", "callback_data": "ap:apr-1:r"}],
        ]
    }
    card = message(
        GROUP,
        user(BOT_ID, "Hatch", is_bot=True),
        "🔐 Approval needed: shell",
        message_id=4000,
        thread_id=TOPIC,
        reply_markup=keyboard,
    )
    async with running(channel, host):
        await tg.push(said(REQUESTER, "@hatchbot hi", entities=mention("@hatchbot hi")))
        await host.wait_envelopes(1)
        await tg.push(said(APPROVER, "skip it", reply_to=card))
        [click] = await host.wait_clicks(1)
    assert (click.approval_id, click.choice, click.replacement_text) == (
        "apr-1",
        ApprovalChoice.DENY,
        "skip it",
    )


async def test_reply_to_an_ordinary_bot_message_is_delivered(
    tg: FakeTelegram, store: Store
) -> None:
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        await tg.push(said(REQUESTER, "@hatchbot hi", entities=mention("@hatchbot hi")))
        [env] = await host.wait_envelopes(1)
        [answer] = await channel.send(env.reply_target, "hello")
        shown = tg.bot_message_now(int(GROUP["id"]), int(answer.message_id.split(":")[1]))
        await tg.push(said(REQUESTER, "thanks", reply_to=shown))
        envelopes: list[IngressEnvelope] = await host.wait_envelopes(2)
    assert envelopes[1].text == "thanks" and envelopes[1].addressed_to_bot
    assert host.clicks == []


async def test_reactions_count_only_on_open_cards(tg: FakeTelegram, store: Store) -> None:
    verdict: Verdict = approver_verdict(approvers=[str(APPROVER)], pending=["apr-1", "apr-2"])
    host = RecordingHost(verdict)
    channel = channel_for(tg, store, reactions_for_approval=True)
    target = DeliveryTarget(channel=REF, conversation_id=str(GROUP["id"]))
    second = ApprovalCard(
        approval_id="apr-2", tool="shell", lines=(), reason="r", requested_by="Ann"
    )
    async with running(channel, host):
        await tg.push(said(REQUESTER, "@hatchbot hi", entities=mention("@hatchbot hi")))
        await host.wait_envelopes(1)
        closed = await channel.cards.post_approval_card(target, CARD)
        decided = ApprovalCard(
            approval_id="apr-1",
            tool="shell",
            lines=CARD.lines,
            reason=CARD.reason,
            requested_by="Ann",
            state=CardState.DENIED,
            decided_by="Boss",
        )
        await channel.cards.update_approval_card(closed, decided)
        still_open = await channel.cards.post_approval_card(target, second)
        for sent in (closed, still_open):
            await tg.push(
                reaction(GROUP, int(sent.message_id.split(":")[1]), user(APPROVER, "Boss"), "👎")
            )
        [click] = await host.wait_clicks(1)
    assert (click.approval_id, click.choice) == ("apr-2", ApprovalChoice.DENY)
