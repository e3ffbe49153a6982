"""``/forget`` through the whole daemon and python-telegram-bot against the loopback Bot API
fake: the request goes to an approver as an approval card, the requester cannot approve it
themself, an approval forgets them on the channel (others' records untouched, the audit
trail kept with their id replaced), a denial deletes nothing, and a person has one request
waiting at a time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bot.app import App
from bot.channel import ClickVerdict
from bot.config import Settings, parse_settings
from bot.gateway.forget import ALREADY_WAITING, ASKING
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.forget import TOMBSTONE_PREFIX
from channels.telegram.cards import APPROVE_LABEL, DENY_LABEL
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.telegram_server import (
    ApiCall,
    FakeTelegram,
    callback,
    command,
    message,
    private_chat,
    user,
)
from tests.fakes.telegram_setup import APPROVER, REQUESTER, started
from tests.gateway.conftest import echo
from tests.gateway.test_gateway import until

ANN, BOB = REQUESTER, 4004
GROUP: dict[str, Any] = {"id": -100500600, "type": "supergroup", "title": "team"}
GROUP_SESSION = f"telegram.main:{GROUP['id']}"


def settings(tg: FakeTelegram, tmp_path: Path) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30},
            "channels": {
                "telegram": {
                    "main": {
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                        "reconnect_initial_s": 0.01,
                        "reconnect_max_s": 0.05,
                        "allowed_users": ["*"],
                        "approvers": [str(APPROVER)],
                        "require_mention": False,
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )


def sent_with(text: str) -> Any:
    return lambda c: text in str(c.params.get("text"))


def button(card: ApiCall, label: str) -> str:
    rows = card.params["reply_markup"]["inline_keyboard"]
    [data] = [b["callback_data"] for row in rows for b in row if b["text"] == label]
    return str(data)


def shown(tg: FakeTelegram) -> dict[str, Any]:
    """The approval card as the group shows it (to tap)."""
    [card] = [m for m in tg.bot_messages(GROUP["id"]) if "Approval needed" in m["text"]]
    return card


async def conversations(tg: FakeTelegram, app: App) -> None:
    """Ann and Bob talk in the group, Ann in her DM; every message answered."""
    await started(app)
    await tg.push({"message": message(GROUP, user(ANN), "ann's plan", message_id=1)})
    await tg.push({"message": message(GROUP, user(BOB), "bob's plan", message_id=2)})
    dm = private_chat(ANN)
    await tg.push({"message": message(dm, user(ANN), "ann's secret", message_id=3)})
    await tg.wait_for("sendMessage", sent_with("echo: "), count=3)
    await app.store.memory.add(
        scope_key=f"conversation:telegram.main:{GROUP['id']}", content="ann", created_by=str(ANN)
    )


async def ask_to_forget(tg: FakeTelegram) -> ApiCall:
    """Ann types /forget in the group; the approval card it posts there."""
    await tg.push(
        {"message": message(GROUP, user(ANN), "/forget", message_id=4, entities=command("/forget"))}
    )
    await tg.wait_for("sendMessage", sent_with(ASKING))
    [card] = await tg.wait_for("sendMessage", sent_with("🔐 Approval needed"))
    assert card.params["chat_id"] == GROUP["id"]
    assert "forget" in str(card.params["text"])
    return card


async def test_an_approved_forget_deletes_the_requesters_records(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    async with App(settings(tg, tmp_path), provider=ScriptedProvider([echo] * 5), tools=[]) as app:
        await conversations(tg, app)
        card = await ask_to_forget(tg)
        on_card = shown(tg)
        approve = button(card, APPROVE_LABEL)

        await tg.push(callback("q-ann", user(ANN), approve, on_card))
        [refused] = await tg.wait_for("answerCallbackQuery")
        assert refused.params["text"] == ClickVerdict.NOT_AUTHORISED.message

        await tg.push(callback("q-boss", user(APPROVER), approve, on_card))
        [done] = await tg.wait_for("sendMessage", sent_with("Done: I forgot you"))
        assert done.params["chat_id"] == GROUP["id"]
        assert "4 history messages" in str(done.params["text"])  # her group turn and her DM
        assert "1 note," in str(done.params["text"])

        group = await app.store.history.load(GROUP_SESSION)
        assert [m.content for m in group] == ["bob's plan", "echo: bob's plan"]
        assert await app.store.history.load(f"telegram.main:{ANN}") == []
        rows = await app.store.db.fetchall("SELECT sender_id FROM inbox")
        assert [r["sender_id"] for r in rows] == [str(BOB)]
        audit = await app.store.audit.since()
        asked = [e for e in audit if e.tool == "forget"]
        assert [e.decided_by for e in asked if e.decision == "approved"] == [str(APPROVER)]
        assert all(e.requester.startswith(TOMBSTONE_PREFIX) for e in asked)
        assert not any(e.requester == str(ANN) or e.decided_by == str(ANN) for e in audit)


async def test_a_denied_forget_deletes_nothing(tg: FakeTelegram, tmp_path: Path) -> None:
    async with App(settings(tg, tmp_path), provider=ScriptedProvider([echo] * 5), tools=[]) as app:
        await conversations(tg, app)
        card = await ask_to_forget(tg)
        on_card = shown(tg)
        await tg.push(callback("q-boss", user(APPROVER), button(card, DENY_LABEL), on_card))
        [answer] = await tg.wait_for("sendMessage", sent_with("Nothing was deleted"))
        assert answer.params["text"] == "Nothing was deleted: an approver declined."
        await asyncio.sleep(0)
        assert len(await app.store.history.load(GROUP_SESSION)) == 4
        rows = await app.store.db.fetchall(
            "SELECT COUNT(*) AS n FROM inbox WHERE sender_id = ?", (str(ANN),)
        )
        assert rows[0]["n"] == 2


async def test_one_forget_waits_at_a_time_per_person(tg: FakeTelegram, tmp_path: Path) -> None:
    async with App(settings(tg, tmp_path), provider=ScriptedProvider([echo] * 5), tools=[]) as app:
        await conversations(tg, app)
        card = await ask_to_forget(tg)
        for n in range(5, 9):  # four more while the first waits
            forget = message(GROUP, user(ANN), "/forget", message_id=n, entities=command("/forget"))
            await tg.push({"message": forget})
        await tg.push({"message": message(GROUP, user(BOB), "bob again", message_id=9)})
        await tg.wait_for("sendMessage", sent_with("echo: bob again"))
        said = [str(c.params["text"]) for c in tg.calls_of("sendMessage")]
        waiting = await app.store.approvals.list(status=ApprovalStatus.PENDING)
        assert said.count(ALREADY_WAITING) == 1  # told once, then quiet
        assert said.count(ASKING) == 1 and len(waiting) == 1
        assert sum("Approval needed" in text for text in said) == 1

        # once the first is decided, a new request asks again
        await tg.push(callback("q-boss", user(APPROVER), button(card, DENY_LABEL), shown(tg)))
        await tg.wait_for("sendMessage", sent_with("Nothing was deleted"))
        # the request lets go of its place once its last message's send returned (the send
        # records the message's id after Telegram answered): wait for that, not a moment
        await until(lambda: not app.gateway._forget._waiting)
        forget = message(GROUP, user(ANN), "/forget", message_id=10, entities=command("/forget"))
        await tg.push({"message": forget})
        await tg.wait_for("sendMessage", sent_with(ASKING), count=2)
        await tg.wait_for("sendMessage", sent_with("🔐 Approval needed"), count=2)


async def test_a_forget_waiting_on_another_replica_is_not_asked_again(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    async with App(settings(tg, tmp_path), provider=ScriptedProvider([echo] * 5), tools=[]) as app:
        await started(app)
        # the pending card another replica of the same database posted for Ann's /forget
        now = time.time()
        elsewhere = ApprovalRecord(
            id="apr-elsewhere",
            channel="telegram.main",
            conversation_id=str(GROUP["id"]),
            thread_id=None,
            session_key=GROUP_SESSION,
            requester=str(ANN),
            requester_name="Ann",
            tool="forget",
            fingerprint="f" * 64,
            summary=("user: 1001",),
            ask_reason="it has side effects",
            created_at=now,
            expires_at=now + 30,
            replica_id="replica-b",
        )
        await app.store.approvals.create(elsewhere)
        forget = message(GROUP, user(ANN), "/forget", message_id=1, entities=command("/forget"))
        await tg.push({"message": forget})
        await tg.wait_for("sendMessage", sent_with(ALREADY_WAITING))
        await tg.push({"message": message(GROUP, user(BOB), "bob", message_id=2)})
        await tg.wait_for("sendMessage", sent_with("echo: bob"))
        said = [str(c.params["text"]) for c in tg.calls_of("sendMessage")]
        waiting = await app.store.approvals.list(status=ApprovalStatus.PENDING)
    assert ASKING not in said and not any("Approval needed" in text for text in said)
    assert [r.id for r in waiting] == ["apr-elsewhere"]
