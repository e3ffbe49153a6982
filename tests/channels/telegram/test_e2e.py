"""End to end: the whole daemon (gateway, approvals, agent loop) behind the Telegram channel,
built from settings through the channel registry, against the loopback Bot API fake.

A DM turn asks for a side-effecting tool: the approval card (inline keyboard) is posted in the
requester's DM and the approver's DM; the requester's tap is refused with an alert; the
approver's tap runs the tool, the cards show the outcome, progress is edited in place and the
answer arrives as Telegram HTML. Deny with a reply: the requester's reply to a card is
refused and never reaches the model; the approver's reply denies the call, the model gets the
text and both cards show "✏️ Denied with a reply". A card posted just before a crash (its
message reference never stored) loses its buttons when tapped after the restart. In a forum
group, a message without a mention is ignored and one with a mention is answered in the same
topic. A long answer with code is split under 4,096 characters with every chunk valid on its
own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.app import App
from bot.approval.card import card_for
from bot.channel import ClickVerdict
from bot.envelope import DeliveryTarget
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.fakes.telegram_server import (
    JSON,
    ApiCall,
    FakeTelegram,
    bot_message,
    callback,
    forum_chat,
    mention,
    message,
    private_chat,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REQUESTER, settings_for, started

pytestmark = pytest.mark.usefixtures("telegram_env")

TOPIC = 77


def is_card(c: ApiCall) -> bool:
    return "reply_markup" in c.params


def card_shown_in(tg: FakeTelegram, chat_id: int) -> JSON:
    """The approval card in ``chat_id`` as Telegram shows it (to reply to or tap)."""
    [card] = [m for m in tg.bot_messages(chat_id) if m["text"].startswith("🔐 Approval needed")]
    return card


async def test_dm_turn_with_approval(tg: FakeTelegram, tmp_path: Path) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Deployed **v2** & done.")]
    )
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER, "Ann"), "deploy v2", message_id=10)})

        # the card goes to the approver's DM; the requester's DM is told it waits, with no
        # buttons the requester could not use
        [card] = await tg.wait_for("sendMessage", is_card)
        assert card.params["chat_id"] == APPROVER
        buttons = card.params["reply_markup"]["inline_keyboard"][0]
        approve = buttons[0]["callback_data"]
        assert re.fullmatch(r"ap:[\w-]+:a", approve)
        assert "deploy" in card.params["text"] and "Asked in: telegram.main" in card.params["text"]
        await tg.wait_for(
            "sendMessage",
            lambda c: (
                c.params["chat_id"] == REQUESTER
                and "waits for an approver" in str(c.params.get("text"))
            ),
        )
        assert not [m for m in tg.bot_messages(REQUESTER) if "reply_markup" in m]
        assert ran == []

        approver_dm = private_chat(APPROVER)
        await tg.push(
            callback("q-boss", user(APPROVER, "Boss"), approve, bot_message(approver_dm, 502))
        )
        [answer] = await tg.wait_for("sendMessage", lambda c: "done" in str(c.params.get("text")))
        assert answer.params["text"] == "Deployed <b>v2</b> &amp; done."
        assert answer.params["parse_mode"] == "HTML"
        assert answer.params["chat_id"] == REQUESTER
        assert ran == [{"version": "v2"}]

        edits = await tg.wait_for(
            "editMessageText", lambda c: "Approved: deploy" in str(c.params.get("text"))
        )
        assert all("reply_markup" not in e.params for e in edits)
        await tg.wait_for("editMessageText", lambda c: "✅ deploy" in str(c.params.get("text")))
        accepted = [
            a
            for a in tg.calls_of("answerCallbackQuery")
            if a.params["callback_query_id"] == "q-boss"
        ]
        assert accepted and not accepted[0].params.get("show_alert")

        rows = await app.store.audit.since()
        decisions = {(row.decision, row.decided_by) for row in rows}
        assert any(by == str(APPROVER) and "refused" not in d for d, by in decisions)


async def test_group_mention_gating_and_topic(tg: FakeTelegram, tmp_path: Path) -> None:
    provider = ScriptedProvider([reply("Hello, topic.")])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    group = forum_chat()
    async with app:
        await started(app)
        quiet = message(
            group, user(REQUESTER), "nobody asked the bot", message_id=20, thread_id=TOPIC
        )
        await tg.push({"message": quiet})
        text = "@hatchbot say hello"
        asked = message(
            group, user(REQUESTER), text, message_id=21, thread_id=TOPIC, entities=mention(text)
        )
        await tg.push({"message": asked})
        [answer] = await tg.wait_for("sendMessage", lambda c: "topic" in str(c.params["text"]))
    assert answer.params["chat_id"] == group["id"]
    assert answer.params["message_thread_id"] == TOPIC
    assert answer.params["reply_parameters"]["message_id"] == 21
    assert len(provider.requests) == 1
    assert provider.requests[0].messages[-1].content == "say hello"


async def test_long_answer_with_code_is_split(tg: FakeTelegram, tmp_path: Path) -> None:
    code = "\n".join(f"if a < {i} and b > {i}: total += {i}" for i in range(200))
    long_answer = "Here is the **plan**.\n\n```python\n" + code + "\n```\n\n" + "Done. " * 300
    assert len(long_answer) > 4096
    provider = ScriptedProvider([reply(long_answer)])
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[])
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        await tg.push({"message": message(dm, user(REQUESTER), "plan it", message_id=30)})
        await tg.wait_for("sendMessage", lambda c: "Done." in str(c.params["text"]))
        chunks = [str(c.params["text"]) for c in tg.calls_of("sendMessage")]
    assert len(chunks) >= 2
    assert all(len(c) <= 4096 for c in chunks)
    assert all(c.count("<pre>") == c.count("</pre>") for c in chunks)
    joined = "".join(chunks)
    assert "if a &lt; 0 and b &gt; 0: total += 0" in joined
    assert "if a &lt; 199 and b &gt; 199: total += 199" in joined


async def test_dm_reply_to_card_denies_with_text(tg: FakeTelegram, tmp_path: Path) -> None:
    ran: list[Mapping[str, object]] = []
    provider = ScriptedProvider(
        [reply("", call("deploy", {"version": "v2"})), reply("Understood: v3 it is.")]
    )
    app = App(settings_for(tg, tmp_path), provider=provider, tools=[deploy_tool(ran)])
    async with app:
        await started(app)
        dm, approver_dm = private_chat(REQUESTER), private_chat(APPROVER)
        await tg.push({"message": message(dm, user(REQUESTER, "Ann"), "deploy v2", message_id=10)})
        await tg.wait_for("sendMessage", is_card)

        answer_text = "Use v3, v2 is broken."
        approver_reply = message(
            approver_dm,
            user(APPROVER, "Boss"),
            answer_text,
            message_id=12,
            reply_to=card_shown_in(tg, APPROVER),
        )
        await tg.push({"message": approver_reply})
        [final] = await tg.wait_for("sendMessage", lambda c: "v3 it is" in str(c.params["text"]))
        edits = await tg.wait_for(
            "editMessageText",
            lambda c: "Denied with a reply: deploy" in str(c.params["text"]),
        )
        [ack] = await tg.wait_for("setMessageReaction", lambda c: c.params["chat_id"] == APPROVER)
        rows = await app.store.audit.since()

    assert ran == []
    assert final.params["chat_id"] == REQUESTER
    assert {e.params["chat_id"] for e in edits} == {APPROVER}
    assert all("reply_markup" not in e.params for e in edits)
    assert all(m["text"].startswith("✏️ Denied with a reply") for m in tg.bot_messages(APPROVER))
    assert ack.params["message_id"] == 12
    assert ack.params["reaction"] == [{"type": "emoji", "emoji": "👍"}]
    [_, second] = provider.requests
    seen = [str(m.content) for m in second.messages]
    assert f"Not executed: the approver answered instead: {answer_text}" in seen[-1]
    decisions = {(row.decision, row.decided_by) for row in rows}
    assert ("edited", str(APPROVER)) in decisions


async def test_card_left_with_buttons_by_a_crash_loses_them(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    """The daemon died after posting a card and before storing its message reference: the
    restart expires the approval but cannot edit that card. A tap on it is told the request
    expired, and the approval service turns that very card into the outcome."""
    ran: list[Mapping[str, object]] = []
    app = App(settings_for(tg, tmp_path), provider=ScriptedProvider([]), tools=[deploy_tool(ran)])
    async with app:
        channel = await started(app)
        now = 1_900_000_000.0
        record = ApprovalRecord(
            id="crash-1",
            channel="telegram.main",
            conversation_id=str(REQUESTER),
            thread_id=None,
            session_key=f"telegram.main:{REQUESTER}",
            requester=str(REQUESTER),
            requester_name="Ann",
            tool="deploy",
            fingerprint="f" * 64,
            summary=("version: v2",),
            ask_reason="deploy is not auto-approved",
            created_at=now,
            expires_at=now + 300,
        )
        await app.store.approvals.create(record)
        target = DeliveryTarget(channel=channel.ref, conversation_id=str(APPROVER))
        await channel.cards.post_approval_card(target, card_for(record, timeout_s=300))
        await tg.wait_for("sendMessage", is_card)
        assert await app.approvals.expire_pending() == 1  # what the restart does

        card = card_shown_in(tg, APPROVER)
        assert "reply_markup" in card  # the restart could not reach it
        approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        await tg.push(callback("q-after", user(APPROVER, "Boss"), approve, card))
        [answer] = await tg.wait_for("answerCallbackQuery")
        [edit] = await tg.wait_for(
            "editMessageText", lambda c: c.params["message_id"] == card["message_id"]
        )
        row = await app.store.approvals.get("crash-1")

    assert answer.params["text"] == ClickVerdict.UNKNOWN.message
    assert answer.params["show_alert"] is True
    assert edit.params["text"].startswith("<b>⌛ Expired: deploy</b>")
    assert "reply_markup" not in tg.bot_message_now(APPROVER, card["message_id"])
    assert row is not None and row.status is ApprovalStatus.EXPIRED
    assert ran == []
