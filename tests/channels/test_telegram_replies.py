"""Deny with a reply and stale cards on Telegram, through the real python-telegram-bot.

A reply to an approval card is an approval answer, never a message for the agent: with text
from an approver it is ``DENY`` with that text; from anyone else it gets the verdict as a
reply; blank it changes nothing. A tap or reply on a card whose approval is no longer open
takes the buttons off that card. The card index lives in a real SQLite file, so a card is
still recognised after a restart.

"Not delivered" is checked with a later message in the same chat: updates are handled in
order, so when that one arrives first, the reply was not delivered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.channel import ApprovalCard, ApprovalChoice, CardState, ClickVerdict, SentMessage
from bot.envelope import DeliveryTarget, IngressEnvelope
from bot.store import Store
from channels.telegram import TelegramChannel
from channels.telegram_replies import EMPTY_REPLY
from channels.telegram_taps import REPLY_HINT
from tests.channels.test_telegram import (
    APPROVER,
    REF,
    REQUESTER,
    STRANGER,
    TOKEN,
    channel_for,
    running,
)
from tests.fakes.recording_host import RecordingHost, Verdict, approver_verdict
from tests.fakes.telegram_server import (
    BOT_ID,
    JSON,
    FakeTelegram,
    callback,
    forum_chat,
    mention,
    message,
    user,
)

GROUP = forum_chat(-100555)
TOPIC = 9
CARD = ApprovalCard(
    approval_id="apr-1",
    tool="shell",
    lines=("command: ls /tmp",),
    reason="shell is not auto-approved",
    requested_by="Ann",
)
NO_LONGER_OPEN = "\n\n<i>This request is no longer open.</i>"
_ids = iter(range(100, 10_000))


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "state.db") as opened:
        yield opened


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
    sent = await channel.post_approval_card(env.reply_target, CARD)
    number = int(sent.message_id.split(":")[1])
    return sent, tg.bot_message_now(int(GROUP["id"]), number)


async def later_message_arrives_first(tg: FakeTelegram, host: RecordingHost) -> None:
    await tg.push(said(REQUESTER, "@hatchbot next", entities=mention("@hatchbot next")))
    envelopes = await host.wait_envelopes(2)
    assert [e.text for e in envelopes] == ["clean up", "next"]


def card_edits(tg: FakeTelegram, card: JSON) -> list[str]:
    return [
        c.method
        for c in tg.calls
        if c.method in ("editMessageText", "editMessageReplyMarkup")
        and c.params["message_id"] == card["message_id"]
    ]


async def test_card_offers_reply_instead_which_decides_nothing(
    tg: FakeTelegram, store: Store
) -> None:
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        decide, [reply_button] = card["reply_markup"]["inline_keyboard"]
        assert [b["text"] for b in decide] == ["✅ Approve", "❌ Deny", "♾️ Always"]
        assert reply_button == {"text": "✏️ Reply instead", "callback_data": "ap:apr-1:r"}
        await tg.push(callback("q-r", user(APPROVER, "Boss"), "ap:apr-1:r", card))
        [answer] = await tg.wait_for("answerCallbackQuery")
    assert (
        answer.params["text"] == REPLY_HINT == "Reply to this card with the text to send instead."
    )
    assert answer.params["show_alert"] is True
    assert host.clicks == []
    assert card_edits(tg, card) == []


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


@pytest.mark.parametrize(
    ("text", "extra"),
    [
        ("   \n ", {}),
        ("", {"sticker": {**STICKER, "type": "regular", "is_video": False}}),
    ],
    ids=["blank", "sticker"],
)
async def test_blank_reply_is_refused(
    tg: FakeTelegram, store: Store, text: str, extra: dict[str, Any]
) -> None:
    """Decision: a reply without text changes nothing (it is not a plain deny)."""
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        await tg.push(said(APPROVER, text, reply_to=card, **extra))
        [told] = await tg.wait_for("sendMessage", lambda c: c.params.get("text") == EMPTY_REPLY)
        await later_message_arrives_first(tg, host)
    assert told.params["message_thread_id"] == TOPIC
    assert host.clicks == []
    assert card_edits(tg, card) == []


async def test_tap_on_unknown_approval_takes_the_buttons_off(
    tg: FakeTelegram, store: Store
) -> None:
    host = pending_host("some-other-approval")
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        [posted] = tg.calls_of("sendMessage")
        await tg.push(callback("q-old", user(APPROVER, "Boss"), "ap:apr-1:a", card))
        [answer] = await tg.wait_for("answerCallbackQuery")
        [edit] = await tg.wait_for("editMessageText")
    assert answer.params["text"] == ClickVerdict.UNKNOWN.message
    assert answer.params["show_alert"] is True
    assert edit.params["text"] == posted.params["text"] + NO_LONGER_OPEN
    assert "reply_markup" not in edit.params
    now = tg.bot_message_now(int(GROUP["id"]), card["message_id"])
    assert "reply_markup" not in now
    assert now["text"].startswith("🔐 Approval needed: shell\ncommand: ls /tmp")
    assert now["text"].endswith("This request is no longer open.")


async def test_tap_on_decided_approval_removes_only_the_buttons(
    tg: FakeTelegram, store: Store
) -> None:
    """Already decided: the decision's own card edit may be on its way, so the text is left
    alone."""

    def decided(_click: Any) -> ClickVerdict:
        return ClickVerdict.ALREADY_DECIDED

    host = RecordingHost(decided)
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        await tg.push(callback("q-late", user(APPROVER, "Boss"), "ap:apr-1:d", card))
        [answer] = await tg.wait_for("answerCallbackQuery")
        [edit] = await tg.wait_for("editMessageReplyMarkup")
    assert answer.params["text"] == ClickVerdict.ALREADY_DECIDED.message
    assert edit.params["message_id"] == card["message_id"]
    assert "reply_markup" not in edit.params
    now = tg.bot_message_now(int(GROUP["id"]), card["message_id"])
    assert "reply_markup" not in now and now["text"] == card["text"]
    assert card_edits(tg, card) == ["editMessageReplyMarkup"]


async def test_accepted_tap_leaves_the_card_to_the_service(tg: FakeTelegram, store: Store) -> None:
    host = pending_host()
    channel = channel_for(tg, store)
    async with running(channel, host):
        _, card = await post_card(tg, channel, host)
        await tg.push(callback("q-ok", user(APPROVER, "Boss"), "ap:apr-1:a", card))
        await tg.wait_for("answerCallbackQuery")
        await later_message_arrives_first(tg, host)
    assert card_edits(tg, card) == []


async def test_reply_after_restart_still_finds_the_card(tmp_path: Path) -> None:
    """The card index is in the database: after a restart a reply to an old card is still an
    approval answer. Its approval expired, so the approver is told and the card, which the
    service never edited (a crash right after posting), loses its buttons."""
    async with FakeTelegram(TOKEN) as tg:
        async with await Store.open(tmp_path / "state.db") as store:
            first = pending_host()
            channel = channel_for(tg, store)
            async with running(channel, first):
                _, card = await post_card(tg, channel, first)
                [posted] = tg.calls_of("sendMessage")
        async with await Store.open(tmp_path / "state.db") as store:
            second = pending_host("a-newer-approval")
            async with running(channel_for(tg, store), second):
                # Without the keyboard in the reply, only the persisted index knows the card.
                without_keyboard = {k: v for k, v in card.items() if k != "reply_markup"}
                reply = said(APPROVER, "use v3", reply_to=without_keyboard)
                await tg.push(reply)
                [click] = await second.wait_clicks(1)
                [told] = await tg.wait_for(
                    "sendMessage", lambda c: c.params.get("text") == ClickVerdict.UNKNOWN.message
                )
                [edit] = await tg.wait_for("editMessageText")
                await tg.push(said(REQUESTER, "@hatchbot next", entities=mention("@hatchbot next")))
                [env] = await second.wait_envelopes(1)
    assert (click.approval_id, click.replacement_text) == ("apr-1", "use v3")
    assert told.params["reply_parameters"]["message_id"] == reply["message"]["message_id"]
    assert edit.params["text"] == posted.params["text"] + NO_LONGER_OPEN
    assert env.text == "next"


async def test_reply_to_a_card_decided_by_the_service_is_answered_only(
    tg: FakeTelegram, store: Store
) -> None:
    """A card the service already edited to its outcome is not edited again."""

    def decided(_click: Any) -> ClickVerdict:
        return ClickVerdict.ALREADY_DECIDED

    host = RecordingHost(decided)
    channel = channel_for(tg, store)
    async with running(channel, host):
        sent, _ = await post_card(tg, channel, host)
        outcome = ApprovalCard(
            approval_id=CARD.approval_id,
            tool=CARD.tool,
            lines=CARD.lines,
            reason=CARD.reason,
            requested_by=CARD.requested_by,
            state=CardState.APPROVED,
            decided_by="Boss",
        )
        await channel.update_approval_card(sent, outcome)
        card = tg.bot_message_now(int(GROUP["id"]), int(sent.message_id.split(":")[1]))
        assert "reply_markup" not in card
        await tg.push(said(APPROVER, "too late?", reply_to=card))
        await tg.wait_for(
            "sendMessage", lambda c: c.params.get("text") == ClickVerdict.ALREADY_DECIDED.message
        )
        await later_message_arrives_first(tg, host)
    assert card_edits(tg, card) == ["editMessageText"]  # the service's outcome edit only


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
        closed = await channel.post_approval_card(target, CARD)
        decided = ApprovalCard(
            approval_id="apr-1",
            tool="shell",
            lines=CARD.lines,
            reason=CARD.reason,
            requested_by="Ann",
            state=CardState.DENIED,
            decided_by="Boss",
        )
        await channel.update_approval_card(closed, decided)
        still_open = await channel.post_approval_card(target, second)
        for sent in (closed, still_open):
            reaction = {
                "chat": GROUP,
                "message_id": int(sent.message_id.split(":")[1]),
                "user": user(APPROVER, "Boss"),
                "date": 1,
                "old_reaction": [],
                "new_reaction": [{"type": "emoji", "emoji": "👎"}],
            }
            await tg.push({"message_reaction": reaction})
        [click] = await host.wait_clicks(1)
    assert (click.approval_id, click.choice) == ("apr-2", ApprovalChoice.DENY)
