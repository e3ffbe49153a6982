"""The append-only audit trail: one row per approval decision or refused click.

Rows are never updated or deleted (triggers in the schema enforce it). Callers pass values
that are already scrubbed; this module only stores and reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.db import Database, Row, Transaction


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One decision. ``decided_by`` is a person id, ``operator:NAME``, or ``runtime``."""

    at: float
    channel: str
    conversation_id: str
    requester: str
    tool: str
    summary: str
    fingerprint: str
    decision: str
    decided_by: str
    reason: str = ""
    latency_ms: float = 0.0
    id: int = 0


_INSERT = (
    "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary, fingerprint,"
    " decision, decided_by, reason, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
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
        decision=row["decision"],
        decided_by=row["decided_by"],
        reason=row["reason"],
        latency_ms=float(row["latency_ms"]),
    )


class AuditLog:
    """Appends and lists audit rows."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def append(self, entry: AuditEntry) -> int:
        return await self._db.execute(_INSERT, _params(entry))

    @staticmethod
    async def append_in(tx: Transaction, entry: AuditEntry) -> int:
        """Append inside a caller's transaction (so a decision and its row commit together)."""
        return await tx.execute(_INSERT, _params(entry))

    async def since(self, at: float = 0.0, *, limit: int | None = None) -> list[AuditEntry]:
        """Rows with ``at >= at``, oldest first."""
        sql = "SELECT * FROM audit WHERE at >= ? ORDER BY at, id"
        params: tuple[object, ...] = (at,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (at, limit)
        return [_entry(r) for r in await self._db.fetchall(sql, params)]
