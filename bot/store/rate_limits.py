"""The shared token buckets of the rate limits (``rate_limit_buckets``).

Each process of the daemon (each replica) keeps the buckets it uses in memory
(:mod:`bot.gateway.ratelimit`) and merges them into this table behind itself: it hands over
how many tokens it took since its last merge, and the table's row, refilled to now and
those tokens taken, is what every replica counts from afterwards (:meth:`merge`). The
arithmetic is one statement per limit, in SQL both engines speak, so that two replicas
merging at once both count: nothing taken is lost, whoever writes last. A bucket full again
carries nothing and is deleted, only if it is still full in the table (:meth:`drop`). A
start reads them all back (:meth:`load`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Row, Write


@dataclass(frozen=True, slots=True, kw_only=True)
class SavedBucket:
    """One bucket as stored: its tokens counted at ``updated_at`` (wall clock), and when its
    sender or conversation was last told to slow down (0: never)."""

    bucket: str
    tokens: float
    updated_at: float
    noticed_at: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Taken:
    """What one process did with a bucket since its last merge: the tokens it took, when it
    last told its sender (0: never)."""

    bucket: str
    taken: int
    noticed_at: float = 0.0


_ROWS_PER_MERGE = 200  # four values a row, far under either engine's limit on parameters
_NUMBER = "CAST(? AS DOUBLE PRECISION)"
# A new row is the full bucket less what was taken (the VALUES carry ``capacity - taken``);
# an existing one is refilled to now, capped, and loses what was taken (``capacity -
# excluded.tokens``). A clock that went back refills nothing.
_REFILLED = (
    "(rate_limit_buckets.tokens + CASE WHEN excluded.updated_at > rate_limit_buckets.updated_at"
    f" THEN (excluded.updated_at - rate_limit_buckets.updated_at) * {_NUMBER} ELSE 0 END)"
)
_MERGE_TAIL = (
    " ON CONFLICT (bucket) DO UPDATE SET"
    f" tokens = CASE WHEN {_REFILLED} < {_NUMBER} THEN {_REFILLED} ELSE {_NUMBER} END"
    f" - {_NUMBER} + excluded.tokens,"
    " updated_at = CASE WHEN excluded.updated_at > rate_limit_buckets.updated_at"
    " THEN excluded.updated_at ELSE rate_limit_buckets.updated_at END,"
    " noticed_at = CASE WHEN excluded.noticed_at > rate_limit_buckets.noticed_at"
    " THEN excluded.noticed_at ELSE rate_limit_buckets.noticed_at END"
    " RETURNING bucket, tokens, updated_at, noticed_at"
)
_DROP = (
    "DELETE FROM rate_limit_buckets WHERE bucket = ?"
    f" AND tokens + ({_NUMBER} - updated_at) * {_NUMBER} >= {_NUMBER} AND noticed_at <= ?"
)


def _saved(row: Row) -> SavedBucket:
    return SavedBucket(
        bucket=str(row["bucket"]),
        tokens=float(row["tokens"]),
        updated_at=float(row["updated_at"]),
        noticed_at=float(row["noticed_at"]),
    )


class RateLimitBuckets:
    """The ``rate_limit_buckets`` repository (``store.rate_limits``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, *, changed_since: float | None = None) -> list[SavedBucket]:
        """Every saved bucket, or those merged at or after ``changed_since``."""
        sql = "SELECT bucket, tokens, updated_at, noticed_at FROM rate_limit_buckets"
        if changed_since is None:
            return [_saved(r) for r in await self._db.fetchall(sql)]
        rows = await self._db.fetchall(sql + " WHERE updated_at >= ?", (changed_since,))
        return [_saved(r) for r in rows]

    async def merge(
        self, taken: Sequence[Taken], *, capacity: float, per_second: float, now: float
    ) -> list[SavedBucket]:
        """Take ``taken`` from the buckets of one limit (``capacity`` tokens, refilled at
        ``per_second``) as of ``now``; the buckets as they are afterwards, with what every
        process took (tokens may be below 0 when processes took more between them than the
        bucket held: the debt is paid by the refill). One statement per 200 buckets."""
        merged: list[SavedBucket] = []
        for start in range(0, len(taken), _ROWS_PER_MERGE):
            chunk = taken[start : start + _ROWS_PER_MERGE]
            values = ", ".join("(?, ?, ?, ?)" for _ in chunk)
            params: list[object] = []
            for t in chunk:
                params += [t.bucket, capacity - t.taken, now, t.noticed_at]
            # in the order of the placeholders of _MERGE_TAIL
            params += [per_second, capacity, per_second, capacity, capacity]
            rows = await self._db.execute_returning_all(
                "INSERT INTO rate_limit_buckets (bucket, tokens, updated_at, noticed_at)"
                f" VALUES {values}{_MERGE_TAIL}",
                params,
            )
            merged += [_saved(r) for r in rows]
        return merged

    async def drop(
        self,
        buckets: Sequence[str],
        *,
        capacity: float,
        per_second: float,
        now: float,
        noticed_before: float,
    ) -> None:
        """Delete the named buckets of one limit that are full again as of ``now`` and whose
        sender was last told before ``noticed_before`` (one another process still counts
        down stays)."""
        if buckets:
            rows = [(b, now, per_second, capacity, noticed_before) for b in buckets]
            await self._db.commit([Write(_DROP, rows)])

    async def save(self, buckets: Sequence[SavedBucket]) -> None:
        """Store ``buckets`` as they are (replacing what the table holds of them)."""
        if buckets:
            rows = [(b.bucket, b.tokens, b.updated_at, b.noticed_at) for b in buckets]
            await self._db.commit(
                [
                    Write(
                        "INSERT INTO rate_limit_buckets (bucket, tokens, updated_at, noticed_at)"
                        " VALUES (?, ?, ?, ?) ON CONFLICT (bucket) DO UPDATE SET"
                        " tokens = excluded.tokens, updated_at = excluded.updated_at,"
                        " noticed_at = excluded.noticed_at",
                        rows,
                    )
                ]
            )
