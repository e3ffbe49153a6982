"""The persisted inbox: each (channel, platform message id) is answered once."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from bot.store.db import Database, Transaction


class InboxStatus(enum.StrEnum):
    RECEIVED = "received"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxKey:
    """Names one inbox entry: the channel (``kind.alias``) and the platform message id."""

    channel: str
    message_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxEntry:
    channel: str
    message_id: str
    envelope_id: str
    session_key: str
    status: InboxStatus
    error: str | None
    payload: str = ""


_MARK = (
    "UPDATE inbox SET status = ?, error = ?, updated_at = ? WHERE channel = ? AND message_id = ?"
)


class Inbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def admit(
        self,
        *,
        channel: str,
        message_id: str,
        envelope_id: str,
        session_key: str,
        payload: str = "",
    ) -> bool:
        """Record a new inbound message. False when it was seen before (a redelivery)."""
        now = time.time()
        # One statement, one round trip: a redelivery conflicts and returns no row.
        row = await self._db.execute_returning(
            "INSERT INTO inbox (channel, message_id, envelope_id, session_key, payload,"
            " status, received_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (channel, message_id) DO NOTHING RETURNING id",
            (
                channel,
                message_id,
                envelope_id,
                session_key,
                payload,
                InboxStatus.RECEIVED,
                now,
                now,
            ),
        )
        return row is not None

    async def mark(
        self, *, channel: str, message_id: str, status: InboxStatus, error: str | None = None
    ) -> None:
        await self._db.execute(_MARK, (status, error, time.time(), channel, message_id))

    @staticmethod
    async def mark_in(
        tx: Transaction, key: InboxKey, status: InboxStatus, error: str | None = None
    ) -> None:
        """:meth:`mark` inside a transaction the caller holds, so that the new status commits
        together with what it stands for (``processing`` with the turn's user message)."""
        await tx.executemany(_MARK, [(status, error, time.time(), key.channel, key.message_id)])

    async def get(self, *, channel: str, message_id: str) -> InboxEntry | None:
        row = await self._db.fetchone(
            "SELECT channel, message_id, envelope_id, session_key, status, error FROM inbox "
            "WHERE channel = ? AND message_id = ?",
            (channel, message_id),
        )
        if row is None:
            return None
        return InboxEntry(
            channel=row["channel"],
            message_id=row["message_id"],
            envelope_id=row["envelope_id"],
            session_key=row["session_key"],
            status=InboxStatus(row["status"]),
            error=row["error"],
        )

    async def unfinished(self) -> list[InboxEntry]:
        """Messages received or in processing when the daemon last stopped."""
        rows = await self._db.fetchall(
            "SELECT channel, message_id, envelope_id, session_key, status, error, payload "
            "FROM inbox WHERE status IN (?, ?) ORDER BY id",
            (InboxStatus.RECEIVED, InboxStatus.PROCESSING),
        )
        return [
            InboxEntry(
                channel=r["channel"],
                message_id=r["message_id"],
                envelope_id=r["envelope_id"],
                session_key=r["session_key"],
                status=InboxStatus(r["status"]),
                error=r["error"],
                payload=r["payload"],
            )
            for r in rows
        ]

    async def counts(self) -> dict[str, int]:
        rows = await self._db.fetchall("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status")
        return {str(r["status"]): int(r["n"]) for r in rows}
