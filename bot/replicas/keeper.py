"""The lease keeper: this replica's heartbeat, the leases it holds, and whether it takes work.

One :class:`LeaseKeeper` per process over a shared (PostgreSQL) database. :meth:`run` writes
the replica's heartbeat every ``[replicas] heartbeat_s`` and, in the same transaction,
renews the leases it holds a tenure for (:meth:`bot.store.replicas.Replicas.heartbeat`;
by name: a lease whose release failed is not renewed, it lapses at its expiry). A
lease missing from the answer was lost; one not renewed in time is fenced by its own timer
(:mod:`bot.replicas.tenure`): either way its work is cancelled before another replica may
take the role.

:meth:`lead` is what a channel's :meth:`~bot.channel.ChannelHost.lead` becomes here: wait
until the lease is taken, run the work in a task of its own, and return when it is lost.

While heartbeats fail (the database is unreachable or does not answer in time) the replica
takes no work (:meth:`refusal`): the adapter host refuses new messages with
:class:`~bot.errors.StorageUnavailable`, so the platform keeps them (an unconfirmed Telegram
update, an unacknowledged Slack event) for this replica later or for another one, and
``/readyz`` reports not-ready. The first heartbeat that succeeds again ends it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from bot.config.replicas import ReplicasConfig
from bot.errors import StorageError
from bot.replicas.identity import ReplicaIdentity
from bot.replicas.tenure import Tenure
from bot.store.replicas import Replicas

log = structlog.get_logger(__name__)

#: Rows of replicas silent this long are deleted when a replica starts.
FORGET_REPLICAS_AFTER_S = 24 * 3600.0

Work = Callable[[], Awaitable[None]]
Standby = Callable[[str], None]


class LeaseKeeper:
    """This process among the replicas of its database; see the module docstring."""

    def __init__(
        self,
        replicas: Replicas,
        config: ReplicasConfig,
        *,
        identity: ReplicaIdentity | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._replicas = replicas
        self._config = config
        self._clock = clock
        self.identity = identity or ReplicaIdentity.of_this_process(now=clock())
        self._tenures: dict[str, Tenure] = {}
        self._leading: dict[str, asyncio.Lock] = {}
        self._failing_since: float | None = None
        self._failure = ""
        #: this replica's last outage, wall clock: when its first failed heartbeat was
        #: sent, and when one went through again (None while it lasts)
        self._outage: tuple[float, float | None] | None = None
        #: when the last heartbeat that succeeded was sent (loop time; None before the
        #: replica joined): a heartbeat that hangs is a failure too, once the fence has
        #: passed since then
        self._last_ok: float | None = None
        self._left = False

    @property
    def replica_id(self) -> str:
        return self.identity.id

    def held(self) -> list[str]:
        """The leases this replica holds now, by name: not one whose tenure is fenced (its
        work was told to stop, and may still be winding down, e.g. waiting on a database
        that stopped answering)."""
        return sorted(name for name, tenure in self._tenures.items() if not tenure.fenced)

    # -- lifecycle --------------------------------------------------------------------------

    async def join(self) -> None:
        """Write this replica's row (StorageError when the database cannot take it: a
        replica that cannot join does not start) and forget replicas long gone."""
        now = self._clock()
        self._last_ok = asyncio.get_running_loop().time()
        await self._replicas.register(self.identity.record(heartbeat_at=now))
        forgotten = await self._replicas.prune(before=now - FORGET_REPLICAS_AFTER_S)
        log.info("replica_joined", replica=self.replica_id, forgotten=forgotten)

    async def run(self) -> None:
        """Heartbeats every ``heartbeat_s`` until cancelled."""
        while True:
            await self.beat()
            await asyncio.sleep(self._config.heartbeat_s)

    async def leave(self) -> None:
        """A clean stop: fence what is still held, release every lease at once (the next
        holder need not wait for the TTL) and delete the replica's row. A database that
        cannot be reached is logged; the leases then expire on their own. No lease is taken
        after it."""
        self._left = True
        for tenure in list(self._tenures.values()):
            tenure.fence("the replica is stopping", lost=False)
        self._tenures.clear()
        try:
            released = await self._replicas.release_all(self.replica_id)
            await self._replicas.remove(self.replica_id)
        except StorageError as exc:
            log.warning("replica_leave_failed", replica=self.replica_id, error=str(exc))
            return
        log.info("replica_left", replica=self.replica_id, released=released)

    # -- heartbeat --------------------------------------------------------------------------

    async def beat(self) -> None:
        """One heartbeat: the row refreshed and held leases renewed, or the failure noted.
        None after :meth:`leave` (the row stays deleted)."""
        if self._left:
            return
        loop = asyncio.get_running_loop()
        sent = loop.time()
        now = self._clock()
        judged = [t for t in self._tenures.values() if t.taken_at <= sent]
        # only the leases held here now: one whose release failed lapses at its expiry
        # instead of being renewed for as long as this process lives
        holding = [t.name for t in self._tenures.values() if not t.fenced]
        try:
            async with asyncio.timeout(self._config.fence_s):
                renewed = await self._replicas.heartbeat(
                    self.identity.record(heartbeat_at=now),
                    holding,
                    now=now,
                    expires_at=now + self._config.lease_ttl_s,
                )
        except (StorageError, TimeoutError) as exc:
            why = str(exc) or f"no answer within {self._config.fence_s:g}s"
            self._failing(why, at=sent, wall=now)
            return
        self._last_ok = sent
        self._recovered()
        generations = {lease.name: lease.generation for lease in renewed}
        for tenure in judged:
            if tenure.fenced:
                self._drop(tenure, "fenced")
                continue
            if generations.get(tenure.name) != tenure.generation:
                self._drop(tenure, "the lease expired and was not renewed")
            else:
                tenure.fence_at(sent + self._config.fence_s)

    def _failing(self, why: str, *, at: float, wall: float) -> None:
        if self._failing_since is None:
            self._failing_since = at
            self._outage = (wall, None)
            log.error("replica_database_lost", replica=self.replica_id, error=why)
        self._failure = why

    def _recovered(self) -> None:
        if self._failing_since is not None:
            lost_s = asyncio.get_running_loop().time() - self._failing_since
            if self._outage is not None:
                self._outage = (self._outage[0], self._clock())
            log.info("replica_database_back", replica=self.replica_id, lost_s=round(lost_s, 1))
        self._failing_since = None
        self._failure = ""

    def last_outage(self) -> tuple[float, float | None] | None:
        """This replica's last outage (its heartbeats failing), wall clock: when it began,
        and when it ended (None while it lasts); None when there was none."""
        return self._outage

    def refusal(self) -> str | None:
        """Why this replica takes no new work now (its heartbeats fail, or the last one
        that succeeded is older than the fence, or it has left), or None."""
        if self._left:
            return "this replica is stopping"
        if self._failing_since is not None:
            return f"this replica cannot reach its database: {self._failure}"
        if self._last_ok is None:
            return None
        silent_s = asyncio.get_running_loop().time() - self._last_ok
        if silent_s > self._config.fence_s:
            return f"this replica cannot reach its database: no heartbeat for {silent_s:.1f}s"
        return None

    # -- leases -----------------------------------------------------------------------------

    async def lead(self, name: str, work: Work, *, standby: Standby | None = None) -> None:
        """Run ``work()`` while this replica holds the lease ``name`` (see
        :meth:`bot.channel.ChannelHost.lead`): wait until it is taken (``standby`` told why
        if it is not at once, and again whenever the reason changes), run the work in a
        task of its own, return when the lease is lost (the task cancelled first). The
        work's own end releases the lease and is returned or raised. One call per name at a
        time in a process."""
        lock = self._leading.setdefault(name, asyncio.Lock())
        async with lock:
            tenure = await self._wait_for(name, standby)
            task = asyncio.create_task(_run(work), name=f"lease:{name}")
            tenure.work = task
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if tenure.fenced and (current is None or current.cancelling() == 0):
                    return  # lost: the caller waits for it again
                raise
            finally:
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})
                await self._end(tenure)

    async def _wait_for(self, name: str, standby: Standby | None) -> Tenure:
        told: str | None = None
        while True:
            tenure = await self.try_acquire(name)
            if tenure is not None:
                return tenure
            why = self.refusal() or f"another replica holds {name}"
            if standby is not None and why != told:
                standby(why)
                told = why
            await asyncio.sleep(self._config.heartbeat_s)

    async def try_acquire(self, name: str) -> Tenure | None:
        """Take the lease ``name`` if it is free now; None when another replica holds it or
        the database cannot be reached. The tenure is fenced like every other: by its timer,
        or by a heartbeat that no longer finds it."""
        if self.refusal() is not None:
            return None
        loop = asyncio.get_running_loop()
        sent = loop.time()
        now = self._clock()
        try:
            lease = await self._replicas.acquire(
                name, self.replica_id, now=now, expires_at=now + self._config.lease_ttl_s
            )
        except StorageError as exc:
            log.warning("lease_acquire_failed", lease=name, error=str(exc))
            return None
        if lease is None:
            return None
        tenure = Tenure(name=name, generation=lease.generation, taken_at=sent)
        tenure.fence_at(sent + self._config.fence_s)
        self._tenures[name] = tenure
        log.info("lease_taken", lease=name, generation=lease.generation, replica=self.replica_id)
        return tenure

    async def release(self, tenure: Tenure) -> None:
        """End ``tenure`` (its work, if any, is the caller's to stop) and free the lease."""
        await self._end(tenure)

    def _drop(self, tenure: Tenure, why: str) -> None:
        tenure.fence(why)
        if self._tenures.get(tenure.name) is tenure:
            del self._tenures[tenure.name]

    async def _end(self, tenure: Tenure) -> None:
        tenure.end()
        if self._tenures.get(tenure.name) is tenure:
            del self._tenures[tenure.name]
        if tenure.fenced:
            return  # over already; the lease may be another replica's by now
        tenure.fenced = True
        try:
            await self._replicas.release(tenure.name, self.replica_id, tenure.generation)
        except StorageError as exc:
            log.warning("lease_release_failed", lease=tenure.name, error=str(exc))
            return
        log.info("lease_released", lease=tenure.name, generation=tenure.generation)


async def _run(work: Work) -> None:
    await work()
