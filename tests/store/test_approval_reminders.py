"""Reminders and escalation claimed on the approval row (migration 0022), on both engines:
each step once, however many sweeps race for it, and never on a decided row."""

from __future__ import annotations

import asyncio

from bot.approval import audit
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, Resolution
from bot.store.audit import Decision


def _record() -> ApprovalRecord:
    return ApprovalRecord(
        id="cd" * 12,
        channel="slack.main",
        conversation_id="C1",
        thread_id=None,
        session_key="slack.main:C1",
        requester="U1",
        requester_name="Ann",
        tool="shell",
        fingerprint="f" * 64,
        summary=("command: ls",),
        ask_reason="it has side effects",
        created_at=1000.0,
        expires_at=5000.0,
        agent="ops",
    )


async def test_each_step_is_claimed_once_and_audited(store: Store) -> None:
    record = _record()
    await store.approvals.create(record)
    row = audit.entry_for_record(
        record, at=1100.0, decision=Decision.REMINDED, decided_by="runtime", reason="reminder 1"
    )
    won = await asyncio.gather(
        *(store.approvals.claim_reminder(record.id, sent=0, at=1100.0, audit=row) for _ in "abcd")
    )
    assert sorted(won) == [False, False, False, True]
    up = audit.entry_for_record(
        record, at=1200.0, decision=Decision.ESCALATED, decided_by="runtime", reason="escalated"
    )
    won = await asyncio.gather(
        *(
            store.approvals.claim_escalation(record.id, ["U7", "U8"], at=1200.0, audit=up)
            for _ in "ab"
        )
    )
    assert sorted(won) == [False, True]
    stored = await store.approvals.get(record.id)
    assert stored is not None
    assert (stored.reminders_sent, stored.reminded_at) == (1, 1100.0)
    assert (stored.escalated_to, stored.escalated_at, stored.agent) == (("U7", "U8"), 1200.0, "ops")
    assert [e.decision for e in await store.audit.since()] == [
        Decision.REMINDED,
        Decision.ESCALATED,
    ]


async def test_a_decided_row_is_neither_reminded_nor_escalated(store: Store) -> None:
    record = _record()
    await store.approvals.create(record)
    denied = Resolution(status=ApprovalStatus.DENIED, decided_by="U2", reason="click", at=1050.0)
    assert await store.approvals.resolve(
        record.id, denied, audit=audit.entry_for_resolution(record, denied)
    )
    row = audit.entry_for_record(
        record, at=1100.0, decision=Decision.REMINDED, decided_by="runtime", reason="reminder 1"
    )
    assert not await store.approvals.claim_reminder(record.id, sent=0, at=1100.0, audit=row)
    assert not await store.approvals.claim_escalation(record.id, ["U7"], at=1100.0, audit=row)
    assert [e.decision for e in await store.audit.since()] == [Decision.DENIED]
