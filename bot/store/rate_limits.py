"""The saved token buckets of the rate limits (``rate_limit_buckets``).

The gateway keeps the buckets it uses in memory (:mod:`bot.gateway.ratelimit`) and writes
them behind itself: those that changed in one batch, those that filled up again (and so say
nothing) deleted in the same transaction. A start reads them all back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Write


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedBucket:
    """One bucket as stored: its tokens counted at ``updated_at`` (wall clock), and when its
    sender or conversation was last told to slow down (0: never)."""

    bucket: str
    tokens: float
    updated_at: float
    noticed_at: float = 0.0


_UPSERT = (
    "INSERT INTO rate_limit_buckets (bucket, tokens, updated_at, noticed_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (bucket) DO UPDATE SET"
    " tokens = excluded.tokens, updated_at = excluded.updated_at,"
    " noticed_at = excluded.noticed_at"
)
_DELETE = "DELETE FROM rate_limit_buckets WHERE bucket = ?"


class RateLimitBuckets:
    """The ``rate_limit_buckets`` repository."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self) -> list[SavedBucket]:
        """Every saved bucket."""
        rows = await self._db.fetchall(
            "SELECT bucket, tokens, updated_at, noticed_at FROM rate_limit_buckets"
        )
        return [
            SavedBucket(
                bucket=str(r["bucket"]),
                tokens=float(r["tokens"]),
                updated_at=float(r["updated_at"]),
                noticed_at=float(r["noticed_at"]),
            )
            for r in rows
        ]

    async def save(self, changed: Sequence[SavedBucket], dropped: Sequence[str] = ()) -> None:
        """Store ``changed`` and delete ``dropped`` (buckets that are full again), in one
        transaction; nothing at all costs no trip."""
        writes: list[Write] = []
        if changed:
            rows = [(b.bucket, b.tokens, b.updated_at, b.noticed_at) for b in changed]
            writes.append(Write(_UPSERT, rows))
        if dropped:
            writes.append(Write(_DELETE, [(bucket,) for bucket in dropped]))
        await self._db.commit(writes)

    async def delete(self, buckets: Sequence[str]) -> int:
        """Delete the named buckets (forgetting a person); how many there were."""
        deleted = 0
        for bucket in buckets:
            rows = await self._db.execute_returning_all(
                "DELETE FROM rate_limit_buckets WHERE bucket = ? RETURNING bucket", (bucket,)
            )
            deleted += len(rows)
        return deleted
