"""The append-only audit trail: one row per approval decision or refused click.

Rows are never updated or deleted (triggers in the schema enforce it; a migration that
respells stored values lifts them for its own statements only). Callers pass values that are
already scrubbed; this module only stores and reads them.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bot.store.audit_search import PAGE_SIZE, AuditCursor, AuditFilter, page_query
from bot.store.engine import Database, Transaction
from bot.store.statements import Row


class Decision(enum.StrEnum):
    """What was decided about one call: the ``decision`` column of an audit row, the verdict a
    waiting turn gets (:class:`~bot.approval.gate.ApprovalDecision`) and the label of the
    approvals metric. The values are what rows store (``docs/approvals.md`` lists them)."""

    #: The policy let a side-effecting call run without asking (grant, auto_approve, full).
    POLICY_ALLOWED = "policy_allowed"
    #: The policy refused the call outright (deny list, readonly level).
    POLICY_DENIED = "policy_denied"
    #: A person approved (``ALWAYS``: and created a grant), denied, or denied with a reply.
    APPROVED = "approved"
    ALWAYS = "always"
    DENIED = "denied"
    EDITED = "edited"
    #: The runtime refused without asking anyone; the row's reason says why.
    AUTO_DENIED = "auto_denied"
    #: A person was asked and the request closed without an answer (a timeout, a restart, a
    #: shutdown, ``/stop``, a card that could not be posted or seen); the reason says which.
    EXPIRED = "expired"
    #: A click (reaction, reply) that decided nothing, by what it tried to do; the reason
    #: says why it was refused.
    CLICK_REFUSED_APPROVE = "click_refused:approve"
    CLICK_REFUSED_DENY = "click_refused:deny"
    CLICK_REFUSED_ALWAYS = "click_refused:always"
    #: Not a decision: a pending request's card was re-announced, or shown to the further
    #: approvers of ``approval.escalate_to`` (the reason says to whom).
    REMINDED = "reminded"
    ESCALATED = "escalated"
    #: Not a decision: one approval counted toward a request that needs several approvers
    #: (the reason says how it came and which: ``click: approval 1 of 2``); the approval that
    #: completes the quorum is followed by the ``approved`` row.
    VOTED = "voted"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One decision. ``decided_by`` is a person id, ``operator:NAME``, or ``runtime``.
    ``turn_id`` and ``call_id`` name the call it is about (migration 0020); ``None`` in rows
    written before them: not recorded."""

    at: float
    channel: str
    conversation_id: str
    requester: str
    tool: str
    summary: str
    fingerprint: str
    decision: Decision
    decided_by: str
    reason: str = ""
    latency_ms: float = 0.0
    turn_id: str | None = None
    call_id: str | None = None
    id: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditPage:
    """One page of the trail, newest first. ``older`` continues towards older rows
    (``before=``), ``newer`` back towards newer ones (``after=``); ``None`` when there is
    nothing that way."""

    entries: tuple[AuditEntry, ...]
    older: AuditCursor | None
    newer: AuditCursor | None


def _cursor(entry: AuditEntry) -> AuditCursor:
    return AuditCursor(at=entry.at, id=entry.id)


_INSERT = (
    "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary, fingerprint,"
    " decision, decided_by, reason, latency_ms, turn_id, call_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " RETURNING id"
)


def _params(entry: AuditEntry) -> tuple[object, ...]:
    return (
        entry.at,
        entry.channel,
        entry.conversation_id,
        entry.requester,
        entry.tool,
        entry.summary,
        entry.fingerprint,
        entry.decision,
        entry.decided_by,
        entry.reason,
        entry.latency_ms,
        entry.turn_id,
        entry.call_id,
    )


def _entry(row: Row) -> AuditEntry:
    return AuditEntry(
        id=int(row["id"]),
        at=float(row["at"]),
        channel=row["channel"],
        conversation_id=row["conversation_id"],
        requester=row["requester"],
        tool=row["tool"],
        summary=row["summary"],
        fingerprint=row["fingerprint"],
        decision=Decision(row["decision"]),
        decided_by=row["decided_by"],
        reason=row["reason"],
        latency_ms=float(row["latency_ms"]),
        turn_id=row["turn_id"],
        call_id=row["call_id"],
    )


class AuditLog:
    """Appends and lists audit rows."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(self, entry: AuditEntry) -> int:
        row = await self._db.execute_returning(_INSERT, _params(entry))
        assert row is not None  # RETURNING id of a row just inserted
        return int(row["id"])

    @staticmethod
    async def append_in(tx: Transaction, entry: AuditEntry) -> int:
        """Append inside a caller's transaction (so a decision and its row commit together)."""
        row = await tx.fetchone(_INSERT, _params(entry))
        assert row is not None  # RETURNING id of a row just inserted
        return int(row["id"])

    async def since(self, at: float = 0.0) -> list[AuditEntry]:
        """Rows with ``at >= at``, oldest first."""
        rows = await self._db.fetchall("SELECT * FROM audit WHERE at >= ? ORDER BY at, id", (at,))
        return [_entry(r) for r in rows]

    async def page(
        self,
        flt: AuditFilter,
        *,
        before: AuditCursor | None = None,
        after: AuditCursor | None = None,
        size: int = PAGE_SIZE,
    ) -> AuditPage:
        """The ``size`` rows matching ``flt`` just older than ``before`` (the newest rows
        when neither cursor is given), or just newer than ``after`` (the first page once
        fewer than ``size`` are newer); newest first either way. One more row is read to
        know whether the walk can go on."""
        sql, params = page_query(flt, before=before, after=after, limit=size + 1)
        rows = [_entry(r) for r in await self._db.fetchall(sql, params)]
        more = len(rows) > size
        rows = rows[:size]
        older: AuditCursor | None
        newer: AuditCursor | None
        if after is not None:
            if not more:  # back at the newest rows: the first page, full
                return await self.page(flt, size=size)
            rows.reverse()
            older = _cursor(rows[-1])
            newer = _cursor(rows[0])
        else:
            older = _cursor(rows[-1]) if more else None
            newer = _cursor(rows[0]) if before is not None and rows else None
        return AuditPage(entries=tuple(rows), older=older, newer=newer)

    async def matching(self, flt: AuditFilter, *, batch: int = 500) -> AsyncIterator[AuditEntry]:
        """Every row matching ``flt``, newest first, read ``batch`` rows per query (an
        export streams them out without holding the trail in memory)."""
        before: AuditCursor | None = None
        while True:
            found = await self.page(flt, before=before, size=batch)
            for entry in found.entries:
                yield entry
            if found.older is None:
                return
            before = found.older
