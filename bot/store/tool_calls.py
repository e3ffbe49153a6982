"""One row per tool call: ids, tool, scrubbed arguments, outcome, duration, receipt, and who
let it run (``approved_by``: a person's id, ``operator:NAME``, ``runtime`` for a side-effecting
call the policy allowed without asking, ``None`` when no approval was needed or given).

The row keeps arguments and result masked and cut; ``arguments_sha256`` and
``result_sha256`` are the SHA-256 of the full ones, so that a receipt over the row
(:mod:`bot.tools.receipt`) still binds what ran. Rows written before migration 0005 have
neither.

How the call ended is kept as values (migration 0019): ``failed`` (the tool ran and failed)
and ``failure`` (how: ``exit 1``, ``HTTP 404``),
``reason`` (the outcome's :class:`~bot.tools.outcome.OutcomeReason` value), and what the
approval step decided (``decision``, ``decided_by``, ``decision_reason``, ``grant_id``), with
the call's ``fingerprint`` (its audit row's). Rows recorded before it have ``None`` in each:
not recorded, never guessed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Row, Write


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRecord:
    """One row. ``created_at`` is when the call was recorded; ``None`` lets the store stamp
    the insert time (a receipt signs it, so the pipeline sets it when it signs)."""

    turn_id: str
    call_id: str
    session_key: str
    channel: str
    tool: str
    arguments: str
    status: str
    synthetic: bool
    observation: str
    duration_ms: float
    receipt: str | None = None
    approved_by: str | None = None
    arguments_sha256: str | None = None
    result_sha256: str | None = None
    created_at: float | None = None
    #: The tool ran and failed; None: not recorded (a row from before migration 0019).
    failed: bool | None = None
    #: How it failed: ``exit 1``, ``HTTP 404``, ``ToolFailed`` (None: it did not, or not
    #: recorded).
    failure: str | None = None
    #: The outcome's reason (``none`` when the call ran); None: not recorded.
    reason: str | None = None
    #: The audit decision about the call (``approved``, ``denied``, ``policy_allowed`` …);
    #: None when nobody was asked and no policy rule applied, or not recorded.
    decision: str | None = None
    #: Who decided: a person id, ``operator:NAME`` or ``runtime``.
    decided_by: str | None = None
    #: The decision's reason as its audit row gives it (``policy: grant #12``, ``timeout``).
    decision_reason: str | None = None
    grant_id: int | None = None
    fingerprint: str | None = None


_INSERT = (
    "INSERT INTO tool_calls (turn_id, call_id, session_key, channel, tool, arguments,"
    " status, synthetic, observation, duration_ms, receipt, approved_by, arguments_sha256,"
    " result_sha256, created_at, failed, failure, reason, decision, decided_by, decision_reason,"
    " grant_id, fingerprint)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(rec: ToolCallRecord, now: float) -> tuple[object, ...]:
    return (
        rec.turn_id,
        rec.call_id,
        rec.session_key,
        rec.channel,
        rec.tool,
        rec.arguments,
        rec.status,
        int(rec.synthetic),
        rec.observation,
        rec.duration_ms,
        rec.receipt,
        rec.approved_by,
        rec.arguments_sha256,
        rec.result_sha256,
        now if rec.created_at is None else rec.created_at,
        None if rec.failed is None else int(rec.failed),
        rec.failure,
        rec.reason,
        rec.decision,
        rec.decided_by,
        rec.decision_reason,
        rec.grant_id,
        rec.fingerprint,
    )


def recording(recs: Sequence[ToolCallRecord]) -> list[Write]:
    """The write that inserts ``recs`` (for a unit of work); none for no rows."""
    if not recs:
        return []
    now = time.time()
    return [Write(_INSERT, [_row(rec, now) for rec in recs])]


def tool_call_record(r: Row) -> ToolCallRecord:
    """A ``tool_calls`` row (``SELECT *``) as its record."""
    return ToolCallRecord(
        turn_id=r["turn_id"],
        call_id=r["call_id"],
        session_key=r["session_key"],
        channel=r["channel"],
        tool=r["tool"],
        arguments=r["arguments"],
        status=r["status"],
        synthetic=bool(r["synthetic"]),
        observation=r["observation"],
        duration_ms=r["duration_ms"],
        receipt=r["receipt"],
        approved_by=r["approved_by"],
        arguments_sha256=r["arguments_sha256"],
        result_sha256=r["result_sha256"],
        created_at=r["created_at"],
        failed=None if r["failed"] is None else bool(r["failed"]),
        failure=r["failure"],
        reason=r["reason"],
        decision=r["decision"],
        decided_by=r["decided_by"],
        decision_reason=r["decision_reason"],
        grant_id=None if r["grant_id"] is None else int(r["grant_id"]),
        fingerprint=r["fingerprint"],
    )


class ToolCalls:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, rec: ToolCallRecord) -> None:
        await self._db.execute(_INSERT, _row(rec, time.time()))

    async def for_turn(self, turn_id: str) -> list[ToolCallRecord]:
        rows = await self._db.fetchall(
            "SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY id", (turn_id,)
        )
        return [tool_call_record(r) for r in rows]

    async def for_call(self, call_id: str) -> list[ToolCallRecord]:
        """Every row with this call id, oldest first (a model's call ids are unique within
        one reply only, so an id may recur across turns)."""
        rows = await self._db.fetchall(
            "SELECT * FROM tool_calls WHERE call_id = ? ORDER BY id", (call_id,)
        )
        return [tool_call_record(r) for r in rows]

    async def for_turns(self, turn_ids: Sequence[str]) -> list[ToolCallRecord]:
        """The rows of the calls of these turns, oldest first: an audit page finds the call
        each of its rows names (``turn_id`` and ``call_id``, migration 0020)."""
        wanted = sorted(set(turn_ids))
        found: list[ToolCallRecord] = []
        for start in range(0, len(wanted), 200):
            chunk = wanted[start : start + 200]
            marks = ", ".join("?" * len(chunk))
            rows = await self._db.fetchall(
                f"SELECT * FROM tool_calls WHERE turn_id IN ({marks}) ORDER BY id", chunk
            )
            found += [tool_call_record(r) for r in rows]
        return found
