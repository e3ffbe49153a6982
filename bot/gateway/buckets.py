"""The rate limits' token buckets: counted in memory, shared through the database.

:class:`BucketBook` holds the buckets of :mod:`bot.gateway.ratelimit`, by name
(``user:<kind.alias>:<user id>``, ``conversation:<kind.alias>:<conversation id>``). A
decision costs no database trip, which keeps admission's cost where ``bench/throughput.py``
measured it. Every :data:`FLUSH_INTERVAL_S` and when the gateway drains, the tokens taken
since the last time are merged into the table
(:meth:`bot.store.rate_limits.RateLimitBuckets.merge`: the table's row refilled to now,
less what was taken), and, where several replicas share the database, the rows merged since
are read back, so each bucket counts on from what every replica took: replicas share one
bucket per sender and conversation, and a restart finds them (the first decision after a
start reads them all). Between two merges a replica
counts alone, so replicas may let a sender through a little more than the limit within that
second; the table's debt (tokens below 0) makes up for it afterwards. A crash loses at most
the last interval of counting. A bucket that is full again (and whose notice window is
over) says nothing: it is dropped from memory, and from the table when it is full there too,
so both hold only the senders and conversations active in the last minutes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from bot.config.limits import RateLimit, RateLimitsConfig
from bot.errors import StorageError
from bot.store import Store
from bot.store.rate_limits import Taken

log = structlog.get_logger(__name__)

#: How often the buckets are merged with the database.
FLUSH_INTERVAL_S = 1.0
#: A sender (or conversation) is told to slow down at most once in this long.
NOTICE_WINDOW_S = 60.0
#: Buckets full again are looked for at every this many merges (memory is the only reason).
SWEEP_EVERY = 10
#: The table is read back for rows merged since the last read, less this much: room for the
#: clocks of replicas that differ.
REFRESH_OVERLAP_S = 10.0


@dataclass(slots=True)
class Bucket:
    """One bucket as this process counts it."""

    tokens: float  # counted at ``at`` (wall clock: the count outlives the process)
    at: float
    noticed_at: float = 0.0
    taken: int = 0  # tokens taken here since the last merge


def refilled(bucket: Bucket | None, limit: RateLimit, now: float) -> float:
    """The tokens ``bucket`` holds at ``now`` (an unknown bucket is full)."""
    if bucket is None:
        return limit.capacity
    elapsed = max(0.0, now - bucket.at)  # a clock set back refills nothing
    return min(limit.capacity, bucket.tokens + elapsed * limit.per_second)


class BucketBook:
    """The buckets of one process, and their merges with the table (module docstring).
    ``shared``: other replicas use the table too, so it is read back after each merge (alone
    on its database, a process knows the table already)."""

    def __init__(
        self,
        *,
        store: Store,
        config: Callable[[], RateLimitsConfig],
        shared: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._config = config
        self._shared = shared  # other replicas count in the same table
        self._clock = clock
        self._buckets: dict[str, Bucket] = {}
        self._dirty: set[str] = set()
        self._dropped: set[str] = set()
        self._saved: set[str] = set()  # buckets the table holds a row of
        self._loaded = False
        self._flushes = 0
        self._refreshed_at: float | None = None  # the last read of the table began then
        self._load_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()

    def get(self, name: str) -> Bucket | None:
        return self._buckets.get(name)

    def take(self, counted: Sequence[tuple[str, float]], now: float) -> None:
        """One token from each bucket of ``counted`` (its name, and its tokens at ``now``)."""
        for name, tokens in counted:
            held = self._buckets.get(name)
            if held is None:
                held = self._buckets[name] = Bucket(tokens=tokens, at=now)
            held.tokens, held.at = tokens - 1.0, now
            held.taken += 1
            self._dirty.add(name)
            self._dropped.discard(name)

    def notice_due(self, name: str, now: float) -> bool:
        """Whether the sender (or conversation) of the empty bucket ``name`` is to be told
        now; if so, that it was is recorded (and shared at the next merge)."""
        bucket = self._buckets[name]  # empty, so taken from before
        if now - bucket.noticed_at < NOTICE_WINDOW_S:
            return False
        bucket.noticed_at = now
        self._dirty.add(name)
        return True

    async def load(self) -> None:
        """Read the saved buckets once, before the first decision (a bucket this process
        already counted in wins)."""
        if self._loaded:
            return
        async with self._load_lock:
            if self._loaded:
                return
            for saved in await self._store.rate_limits.load():
                self._saved.add(saved.bucket)
                self._buckets.setdefault(
                    saved.bucket,
                    Bucket(tokens=saved.tokens, at=saved.updated_at, noticed_at=saved.noticed_at),
                )
            self._loaded = True
            log.debug("rate_limit_buckets_loaded", buckets=len(self._buckets))

    async def flush(self) -> None:
        """Merge what was taken into the table, each limit in one statement (per 200
        buckets), drop the buckets that say nothing any more, and read the table back."""
        async with self._flush_lock:
            now = self._clock()
            self._flushes += 1
            if self._flushes % SWEEP_EVERY == 0:
                self._sweep(now)
            for prefix, limit in (
                ("user:", self._config().per_user),
                ("conversation:", self._config().per_conversation),
            ):
                if limit.active:
                    await self._merge(prefix, limit, now)
                    await self._drop(prefix, limit, now)
            if self._shared and self._config().active and (self._buckets or self._saved):
                await self._refresh()

    async def _refresh(self) -> None:
        """Count on from the table: what other replicas took since, and buckets they began
        (one read of the rows merged since the last read)."""
        started = self._clock()
        since = None if self._refreshed_at is None else self._refreshed_at - REFRESH_OVERLAP_S
        try:
            rows = await self._store.rate_limits.load(changed_since=since)
        except StorageError as exc:
            log.warning("rate_limit_flush_failed", error=str(exc))
            return
        self._refreshed_at = started
        self._saved |= {row.bucket for row in rows}
        for row in rows:
            if row.bucket in self._dirty or self._limit_of(row.bucket) is None:
                continue  # taken from here meanwhile: merged at the next flush
            held = self._buckets.get(row.bucket)
            if held is None:
                self._buckets[row.bucket] = Bucket(
                    tokens=row.tokens, at=row.updated_at, noticed_at=row.noticed_at
                )
            else:
                held.tokens, held.at = row.tokens, row.updated_at
                held.noticed_at = max(held.noticed_at, row.noticed_at)

    async def _merge(self, prefix: str, limit: RateLimit, now: float) -> None:
        names = sorted(n for n in self._dirty if n.startswith(prefix) and n in self._buckets)
        if not names:
            return
        taken: list[Taken] = []
        for name in names:
            bucket = self._buckets[name]
            taken.append(Taken(bucket=name, taken=bucket.taken, noticed_at=bucket.noticed_at))
            bucket.taken = 0
        self._dirty -= set(names)
        try:
            merged = await self._store.rate_limits.merge(
                taken, capacity=limit.capacity, per_second=limit.per_second, now=now
            )
        except StorageError as exc:
            # handed over again at the next flush; admission goes on from memory meanwhile
            for back in taken:
                held = self._buckets.get(back.bucket)
                if held is not None:
                    held.taken += back.taken
                    self._dirty.add(back.bucket)
            log.warning("rate_limit_flush_failed", error=str(exc))
            return
        for shared in merged:
            self._saved.add(shared.bucket)
            held = self._buckets.get(shared.bucket)
            if held is not None:
                # what every replica took, less what this one took while the merge ran
                held.tokens = shared.tokens - held.taken
                held.at = shared.updated_at
                held.noticed_at = max(held.noticed_at, shared.noticed_at)

    async def _drop(self, prefix: str, limit: RateLimit, now: float) -> None:
        names = sorted(n for n in self._dropped if n.startswith(prefix))
        if not names:
            return
        try:
            await self._store.rate_limits.drop(
                names,
                capacity=limit.capacity,
                per_second=limit.per_second,
                now=now,
                noticed_before=now - NOTICE_WINDOW_S,
            )
        except StorageError as exc:
            log.warning("rate_limit_flush_failed", error=str(exc))
            return
        self._dropped -= set(names)
        self._saved -= set(names)

    def _sweep(self, now: float) -> None:
        for name, bucket in list(self._buckets.items()):
            limit = self._limit_of(name)
            if limit is None:  # turned off: nothing to count, here or in the table
                del self._buckets[name]
                self._dirty.discard(name)
                continue
            full = refilled(bucket, limit, now) >= limit.capacity
            merged = bucket.taken == 0 and name not in self._dirty
            if full and merged and now - bucket.noticed_at >= NOTICE_WINDOW_S:
                del self._buckets[name]
                if name in self._saved:
                    self._dropped.add(name)

    def _limit_of(self, name: str) -> RateLimit | None:
        """The limit a bucket counts for; None when that limit is off now."""
        limit = (
            self._config().per_user if name.startswith("user:") else self._config().per_conversation
        )
        return limit if limit.active else None

    async def run(self) -> None:
        """Write the buckets behind every :data:`FLUSH_INTERVAL_S`; lives until cancelled."""
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_S)
            await self.flush()
