"""Quorum votes (migration 0027) on both engines: one vote per person and request, the
request decided by exactly the vote that completes the quorum however the votes race (two
stores on one database are two replicas), each vote audited; forgetting a person and the
retention job cover the votes; a row from before the migration reads as an ordinary
request."""

from __future__ import annotations

import asyncio

from bot.approval import audit
from bot.store import Store
from bot.store.approvals import (
    ApprovalRecord,
    ApprovalStatus,
    ApprovalVote,
    Resolution,
    VoteOutcome,
    VoteResult,
)
from bot.store.audit import AuditEntry, Decision

ID = "ab" * 12


def _record(quorum: int = 2, status: ApprovalStatus = ApprovalStatus.PENDING) -> ApprovalRecord:
    return ApprovalRecord(
        id=ID,
        channel="slack.main",
        conversation_id="C1",
        thread_id=None,
        session_key="slack.main:C1",
        requester="U1",
        requester_name="Ann",
        tool="shell",
        fingerprint="f" * 64,
        summary=("command: kubectl delete pod x",),
        ask_reason="it has side effects",
        created_at=1000.0,
        expires_at=5000.0,
        quorum=quorum,
    )


async def _vote(store: Store, record: ApprovalRecord, voter: str, at: float = 1100.0) -> VoteResult:
    def row(given: int, needed: int) -> AuditEntry:
        return audit.entry_for_record(
            record,
            at=at,
            decision=Decision.VOTED,
            decided_by=voter,
            reason=f"click: approval {given} of {needed}",
        )

    decided = Resolution(status=ApprovalStatus.APPROVED, decided_by=voter, reason="click", at=at)
    return await store.approvals.vote(
        record.id,
        ApprovalVote(
            voter=voter, voter_name=None, position=0, choice="approve", route="click", at=at
        ),
        audit=row,
        decided=decided,
        decided_audit=audit.entry_for_resolution(record, decided),
    )


async def test_votes_count_once_each_and_the_last_decides(store: Store) -> None:
    record = _record(quorum=3)
    await store.approvals.create(record)
    assert (await _vote(store, record, "U2")).outcome is VoteOutcome.COUNTED
    assert (await _vote(store, record, "U2")).outcome is VoteOutcome.REPEATED
    second = await _vote(store, record, "U3")
    assert (second.outcome, second.given, second.needed) == (VoteOutcome.COUNTED, 2, 3)
    assert (await _vote(store, record, "U4")).outcome is VoteOutcome.DECIDED
    assert (await _vote(store, record, "U5")).outcome is VoteOutcome.CLOSED
    stored = await store.approvals.get(ID)
    assert stored is not None and stored.status is ApprovalStatus.APPROVED
    assert [(v.voter, v.position) for v in stored.votes] == [("U2", 1), ("U3", 2), ("U4", 3)]
    assert [(e.decision, e.decided_by) for e in await store.audit.since()] == [
        (Decision.VOTED, "U2"),
        (Decision.VOTED, "U3"),
        (Decision.VOTED, "U4"),
        (Decision.APPROVED, "U4"),
    ]


async def test_racing_votes_on_two_replicas_decide_once(two: tuple[Store, Store]) -> None:
    first, second = two
    record = _record(quorum=2)
    await first.approvals.create(record)
    # two approvers on two replicas, and each one's click replayed on the other replica
    results = await asyncio.gather(
        _vote(first, record, "U2"),
        _vote(second, record, "U3"),
        _vote(second, record, "U2"),
        _vote(first, record, "U3"),
    )
    outcomes = sorted(r.outcome for r in results)
    assert outcomes.count(VoteOutcome.DECIDED) == 1
    assert outcomes.count(VoteOutcome.COUNTED) == 1
    assert set(outcomes) <= {
        VoteOutcome.DECIDED,
        VoteOutcome.COUNTED,
        VoteOutcome.REPEATED,
        VoteOutcome.CLOSED,
    }
    stored = await second.approvals.get(ID)
    assert stored is not None and stored.status is ApprovalStatus.APPROVED
    assert sorted(v.voter for v in stored.votes) == ["U2", "U3"]
    decisions = [e.decision for e in await first.audit.since()]
    assert decisions.count(Decision.VOTED) == 2 and decisions.count(Decision.APPROVED) == 1


async def test_a_vote_on_a_decided_or_ordinary_row_writes_nothing(store: Store) -> None:
    record = _record(quorum=2)
    await store.approvals.create(record)
    denied = Resolution(status=ApprovalStatus.DENIED, decided_by="U9", reason="click", at=1050.0)
    assert await store.approvals.resolve(
        ID, denied, audit=audit.entry_for_resolution(record, denied)
    )
    assert (await _vote(store, record, "U2")).outcome is VoteOutcome.CLOSED
    stored = await store.approvals.get(ID)
    assert stored is not None and stored.votes == () and stored.quorum == 2


async def test_forgetting_and_retention_cover_the_votes(store: Store) -> None:
    record = _record(quorum=2)
    await store.approvals.create(record)
    await _vote(store, record, "U2")
    report = await store.forget.user("U2")
    stored = await store.approvals.get(ID)
    assert stored is not None
    (vote,) = stored.votes
    assert vote.voter == report.tombstone and vote.voter_name is None
    await _vote(store, record, "U3")  # decides it
    _, pruned = await store.retention.prune_tool_calls(cutoff=10_000.0)
    assert pruned == 1
    assert await store.db.fetchall("SELECT * FROM approval_votes") == []


async def test_the_requesters_forgetting_takes_the_votes_with_the_request(store: Store) -> None:
    record = _record(quorum=2)
    await store.approvals.create(record)
    await _vote(store, record, "U2")
    await _vote(store, record, "U3")
    await store.forget.user("U1")
    assert await store.approvals.get(ID) is None
    assert await store.db.fetchall("SELECT * FROM approval_votes") == []
