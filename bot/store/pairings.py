"""Pairing codes: a stranger's DM gets a one-time code; an admin approves it.

A pairing is ``pending`` until approved, rejected, or past ``expires_at``; an approved pairing
lets that user (on that channel alias) talk to the bot from then on. A rejected one lets
nobody in (the user may ask for a new code, within the daily limit of codes).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Row


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingRecord:
    code: str
    channel: str
    user_id: str
    display_name: str
    status: str  # pending | approved | rejected | expired
    created_at: float
    expires_at: float
    approved_by: str | None = None
    approved_at: float | None = None

    def pending_at(self, now: float) -> bool:
        return self.status == "pending" and self.expires_at > now


def _record(row: Row) -> PairingRecord:
    return PairingRecord(
        code=row["code"],
        channel=row["channel"],
        user_id=row["user_id"],
        display_name=row["display_name"],
        status=row["status"],
        created_at=float(row["created_at"]),
        expires_at=float(row["expires_at"]),
        approved_by=row["approved_by"],
        approved_at=row["approved_at"],
    )


class Pairings:
    """Stores pairing codes and answers "is this user paired?"."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, rec: PairingRecord) -> None:
        await self._db.execute(
            "INSERT INTO pairings (code, channel, user_id, display_name, status, created_at,"
            " expires_at) VALUES (?, ?, ?, ?, 'pending', ?, ?)",
            (rec.code, rec.channel, rec.user_id, rec.display_name, rec.created_at, rec.expires_at),
        )

    async def get(self, code: str) -> PairingRecord | None:
        row = await self._db.fetchone("SELECT * FROM pairings WHERE code = ?", (code,))
        return _record(row) if row else None

    async def for_user(self, channel: str, user_id: str) -> list[PairingRecord]:
        """Every pairing of one user on one channel, newest first."""
        rows = await self._db.fetchall(
            "SELECT * FROM pairings WHERE channel = ? AND user_id = ? ORDER BY created_at DESC",
            (channel, user_id),
        )
        return [_record(r) for r in rows]

    async def is_paired(self, channel: str, user_id: str) -> bool:
        row = await self._db.fetchone(
            "SELECT 1 FROM pairings WHERE channel = ? AND user_id = ? AND status = 'approved'",
            (channel, user_id),
        )
        return row is not None

    async def list(self, *, now: float, include_inactive: bool = False) -> list[PairingRecord]:
        rows = await self._db.fetchall("SELECT * FROM pairings ORDER BY created_at")
        records = [_record(r) for r in rows]
        if include_inactive:
            return records
        return [p for p in records if p.status == "approved" or p.pending_at(now)]

    async def approve(self, code: str, approver: str, now: float) -> PairingRecord | None:
        """Approve a pending, unexpired code; None when there is no such code."""
        updated = await self._db.execute_returning(
            "UPDATE pairings SET status = 'approved', approved_by = ?, approved_at = ?"
            " WHERE code = ? AND status = 'pending' AND expires_at > ? RETURNING *",
            (approver, now, code, now),
        )
        return _record(updated) if updated else None

    async def reject(self, code: str, now: float) -> PairingRecord | None:
        """Reject a pending, unexpired code; None when there is no such code."""
        updated = await self._db.execute_returning(
            "UPDATE pairings SET status = 'rejected'"
            " WHERE code = ? AND status = 'pending' AND expires_at > ? RETURNING *",
            (code, now),
        )
        return _record(updated) if updated else None
