"""The persisted inbox: each (channel, platform message id) is answered once.

Every method names its entry with one :class:`InboxKey`. Where several replicas share the
database, an entry also names the replica that took it to run it (``replica_id``; see
:mod:`bot.gateway.handover`): claimed while it waits, taken again just before its turn, each
a conditional update, so no two replicas run it.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Row, Write


class InboxStatus(enum.StrEnum):
    RECEIVED = "received"
    PROCESSING = "processing"
    DONE = "done"
    FAILED = "failed"
    #: The turn waits on an approval card with its coroutine ended (:mod:`bot.store.parked`):
    #: start-up recovery, the replicas' settlement and ``on_interrupted = "retry"`` leave it
    #: alone; its resumption finishes it.
    PARKED = "parked"


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
    #: The run that last began (None: none began), how many runs began, and whether a tool
    #: with side effects may have run in the last one (recorded only when
    #: ``agent.on_interrupted`` is ``retry``).
    turn_id: str | None = None
    attempts: int = 0
    side_effects: bool = False


_MARK = (
    "UPDATE inbox SET status = ?, error = ?, updated_at = ? WHERE channel = ? AND message_id = ?"
)
_COLUMNS = (
    "channel, message_id, envelope_id, session_key, status, error, payload, turn_id,"
    " attempts, side_effects"
)
_START = (
    "UPDATE inbox SET status = ?, error = NULL, turn_id = ?, attempts = attempts + 1,"
    " side_effects = 0, updated_at = ? WHERE channel = ? AND message_id = ?"
)


def _mark_params(key: InboxKey, status: InboxStatus, error: str | None) -> tuple[object, ...]:
    return (status, error, time.time(), key.channel, key.message_id)


def marking(key: InboxKey, status: InboxStatus, error: str | None = None) -> Write:
    """The write that moves the entry ``key`` to ``status`` (for a unit of work)."""
    return Write(_MARK, [_mark_params(key, status, error)])


def starting(key: InboxKey, turn_id: str) -> Write:
    """The write that moves the entry ``key`` to ``processing`` as the run ``turn_id`` begins
    (counting the run; for a unit of work)."""
    return Write(
        _START, [(InboxStatus.PROCESSING, turn_id, time.time(), key.channel, key.message_id)]
    )


def _entry(row: Row) -> InboxEntry:
    return InboxEntry(
        key=InboxKey(channel=row["channel"], message_id=row["message_id"]),
        envelope_id=row["envelope_id"],
        session_key=row["session_key"],
        status=InboxStatus(row["status"]),
        error=row["error"],
        payload=row["payload"],
        turn_id=row["turn_id"],
        attempts=int(row["attempts"]),
        side_effects=bool(row["side_effects"]),
    )


class Inbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def admit(
        self,
        key: InboxKey,
        *,
        envelope_id: str,
        session_key: str,
        payload: str = "",
        sender_id: str | None = None,
    ) -> bool:
        """Record a new inbound message (``sender_id``: who sent it, for forgetting a person).
        False when it was seen before (a redelivery)."""
        now = time.time()
        # One statement, one round trip: a redelivery conflicts and returns no row.
        row = await self._db.execute_returning(
            "INSERT INTO inbox (channel, message_id, envelope_id, session_key, payload,"
            " sender_id, status, received_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (channel, message_id) DO NOTHING RETURNING id",
            (
                key.channel,
                key.message_id,
                envelope_id,
                session_key,
                payload,
                sender_id,
                InboxStatus.RECEIVED,
                now,
                now,
            ),
        )
        return row is not None

    async def mark(self, key: InboxKey, status: InboxStatus, error: str | None = None) -> None:
        """Move the entry to ``status`` (with ``error`` for a failed one)."""
        await self._db.execute(_MARK, _mark_params(key, status, error))

    async def note_side_effects(self, key: InboxKey) -> None:
        """A tool with side effects is about to run in the entry's current run."""
        await self._db.execute(
            "UPDATE inbox SET side_effects = 1 WHERE channel = ? AND message_id = ?",
            (key.channel, key.message_id),
        )

    async def transcripts(self, key: InboxKey) -> str | None:
        """The JSON of the entry's transcribed audio (:mod:`bot.transcription.kept`), or
        None when none was kept."""
        row = await self._db.fetchone(
            "SELECT transcripts FROM inbox WHERE channel = ? AND message_id = ?",
            (key.channel, key.message_id),
        )
        return None if row is None else row["transcripts"]

    async def keep_transcripts(self, key: InboxKey, transcripts: str) -> None:
        """Keep ``transcripts`` (JSON) with the entry, so a run after a crash reads them
        instead of transcribing again."""
        await self._db.execute(
            "UPDATE inbox SET transcripts = ? WHERE channel = ? AND message_id = ?",
            (transcripts, key.channel, key.message_id),
        )

    async def replace_payload(self, key: InboxKey, payload: str) -> bool:
        """Replace the envelope of an entry whose turn has not begun (an edited message).
        False when the entry is unknown or its turn began."""
        row = await self._db.execute_returning(
            "UPDATE inbox SET payload = ?, updated_at = ? WHERE channel = ? AND message_id = ?"
            " AND status = ? RETURNING id",
            (payload, time.time(), key.channel, key.message_id, InboxStatus.RECEIVED),
        )
        return row is not None

    async def skip(self, key: InboxKey, error: str) -> bool:
        """Mark ``failed`` an entry whose turn has not begun (a deleted message). False when
        the entry is unknown or its turn began."""
        row = await self._db.execute_returning(
            "UPDATE inbox SET status = ?, error = ?, updated_at = ? WHERE channel = ?"
            " AND message_id = ? AND status = ? RETURNING id",
            (
                InboxStatus.FAILED,
                error,
                time.time(),
                key.channel,
                key.message_id,
                InboxStatus.RECEIVED,
            ),
        )
        return row is not None

    async def requeue(self, key: InboxKey) -> bool:
        """Put an entry cut off mid-turn back to ``received``, to run it again (its run count
        stays; no replica has taken it). False unless it was ``processing``."""
        row = await self._db.execute_returning(
            "UPDATE inbox SET status = ?, replica_id = NULL, updated_at = ? WHERE channel = ?"
            " AND message_id = ? AND status = ? RETURNING id",
            (
                InboxStatus.RECEIVED,
                time.time(),
                key.channel,
                key.message_id,
                InboxStatus.PROCESSING,
            ),
        )
        return row is not None

    async def claim_waiting(self, session_key: str, replica_id: str) -> list[InboxEntry]:
        """Claim for ``replica_id`` the entries of ``session_key`` that wait (``received``)
        and nobody else took, in one statement, only while ``replica_id`` owns the session
        (its ``session_owners`` row: a replica whose row was moved or pruned claims nothing);
        returns them with those it had claimed before, in inbox order."""
        rows = await self._db.execute_returning_all(
            f"UPDATE inbox SET replica_id = ? WHERE session_key = ? AND status = ?"
            f" AND (replica_id IS NULL OR replica_id = ?) AND EXISTS (SELECT 1 FROM"
            f" session_owners o WHERE o.session_key = ? AND o.replica_id = ?)"
            f" RETURNING id, {_COLUMNS}",
            (
                replica_id,
                session_key,
                InboxStatus.RECEIVED,
                replica_id,
                session_key,
                replica_id,
            ),
        )
        return [_entry(r) for r in sorted(rows, key=lambda r: int(r["id"]))]

    async def take(self, key: InboxKey, replica_id: str) -> InboxEntry | None:
        """Take the entry for ``replica_id`` to run it now: only while it waits
        (``received``) and no other replica took it. None otherwise (deleted, begun, or
        another replica's)."""
        row = await self._db.execute_returning(
            f"UPDATE inbox SET replica_id = ? WHERE channel = ? AND message_id = ?"
            f" AND status = ? AND (replica_id IS NULL OR replica_id = ?) RETURNING {_COLUMNS}",
            (replica_id, key.channel, key.message_id, InboxStatus.RECEIVED, replica_id),
        )
        return None if row is None else _entry(row)

    async def release(self, key: InboxKey, replica_id: str) -> bool:
        """Give back an entry that waits and that ``replica_id`` (a replica gone) took, for
        another replica to claim; False when it no longer waits or is not that one's."""
        row = await self._db.execute_returning(
            "UPDATE inbox SET replica_id = NULL WHERE channel = ? AND message_id = ?"
            " AND status = ? AND replica_id = ? RETURNING id",
            (key.channel, key.message_id, InboxStatus.RECEIVED, replica_id),
        )
        return row is not None

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
