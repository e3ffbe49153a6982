"""The persisted inbox: each (channel, platform message id) is answered once.

Every method names its entry with one :class:`InboxKey`.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from bot.store.sqlite import Database
from bot.store.statements import Row, Write


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
    key: InboxKey
    envelope_id: str
    session_key: str
    status: InboxStatus
    error: str | None
    payload: str = ""


_MARK = (
    "UPDATE inbox SET status = ?, error = ?, updated_at = ? WHERE channel = ? AND message_id = ?"
)
_COLUMNS = "channel, message_id, envelope_id, session_key, status, error, payload"


def _mark_params(key: InboxKey, status: InboxStatus, error: str | None) -> tuple[object, ...]:
    return (status, error, time.time(), key.channel, key.message_id)


def marking(key: InboxKey, status: InboxStatus, error: str | None = None) -> Write:
    """The write that moves the entry ``key`` to ``status`` (for a unit of work)."""
    return Write(_MARK, [_mark_params(key, status, error)])


def _entry(row: Row) -> InboxEntry:
    return InboxEntry(
        key=InboxKey(channel=row["channel"], message_id=row["message_id"]),
        envelope_id=row["envelope_id"],
        session_key=row["session_key"],
        status=InboxStatus(row["status"]),
        error=row["error"],
        payload=row["payload"],
    )


class Inbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def admit(
        self, key: InboxKey, *, envelope_id: str, session_key: str, payload: str = ""
    ) -> bool:
        """Record a new inbound message. False when it was seen before (a redelivery)."""
        now = time.time()
        # One statement, one round trip: a redelivery conflicts and returns no row.
        row = await self._db.execute_returning(
            "INSERT INTO inbox (channel, message_id, envelope_id, session_key, payload,"
            " status, received_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (channel, message_id) DO NOTHING RETURNING id",
            (
                key.channel,
                key.message_id,
                envelope_id,
                session_key,
                payload,
                InboxStatus.RECEIVED,
                now,
                now,
            ),
        )
        return row is not None

    async def mark(self, key: InboxKey, status: InboxStatus, error: str | None = None) -> None:
        """Move the entry to ``status`` (with ``error`` for a failed one)."""
        await self._db.execute(_MARK, _mark_params(key, status, error))

    async def get(self, key: InboxKey) -> InboxEntry | None:
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM inbox WHERE channel = ? AND message_id = ?",
            (key.channel, key.message_id),
        )
        return None if row is None else _entry(row)

    async def unfinished(self) -> list[InboxEntry]:
        """Messages received or in processing when the daemon last stopped."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM inbox WHERE status IN (?, ?) ORDER BY id",
            (InboxStatus.RECEIVED, InboxStatus.PROCESSING),
        )
        return [_entry(r) for r in rows]

    async def counts(self) -> dict[str, int]:
        rows = await self._db.fetchall("SELECT status, COUNT(*) AS n FROM inbox GROUP BY status")
        return {str(r["status"]): int(r["n"]) for r in rows}
