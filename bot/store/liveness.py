"""Which replicas of a shared database are alive: this one, and those whose heartbeat is
recent.

A replica's row in ``replicas`` is refreshed every heartbeat (:mod:`bot.replicas`) and
deleted at a clean stop; one whose last heartbeat is older than the lease TTL
(``[replicas] lease_ttl_s``) belongs to a process that died or lost the database. What such a
replica left (the sessions it owned, the inbox entries it took, the approvals its turns
waited on) is for a live replica to settle; what a live replica holds is never touched.

Around an outage of this replica's own database (``outage``: its heartbeats failed), the
others could not write their heartbeats either: every replica alive when it began counts as
alive until the TTL after it ended, so a database restart has no replica take the others'
sessions over (and settle what they run) while their first heartbeat after it is on its
way. For the same reason this replica settles what it left itself only once it is
:meth:`Liveness.steady` again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.store.replicas import ReplicaRecord, Replicas

Outage = Callable[[], "tuple[float, float | None] | None"]
"""This replica's last outage, wall clock: (began, ended; None while it lasts), or None."""


class Liveness:
    """This replica's id, and the replicas alive now, read fresh each time."""

    def __init__(
        self,
        replicas: Replicas,
        *,
        replica_id: str,
        ttl_s: float,
        clock: Callable[[], float] = time.time,
        outage: Outage | None = None,
    ) -> None:
        self._replicas = replicas
        self._id = replica_id
        self._ttl_s = ttl_s
        self._clock = clock
        self._outage = outage

    @property
    def replica_id(self) -> str:
        """This process's id (new at every start)."""
        return self._id

    async def live_replicas(self) -> frozenset[str]:
        """The ids of the replicas whose heartbeat is within the lease TTL, this one
        always among them (it is running this); around an outage of this replica's own, those
        alive when it began (module docstring)."""
        rows = await self._replicas.live(since=self._since())
        return frozenset(r.id for r in rows) | {self._id}

    async def lacking(self, capability: str) -> list[ReplicaRecord]:
        """The live replicas (as :meth:`live_replicas` counts them) whose row does not
        advertise ``capability``: a release that cannot do it (a rolling upgrade)."""
        rows = await self._replicas.live(since=self._since())
        return [r for r in rows if capability not in r.capabilities and r.id != self._id]

    def _since(self) -> float:
        now = self._clock()
        since = now - self._ttl_s
        last = None if self._outage is None else self._outage()
        if last is not None and not self._past(last, now):
            since = min(since, last[0] - self._ttl_s)
        return since

    def steady(self) -> bool:
        """Whether this replica's last outage ended more than the TTL ago (or there was
        none): no other replica can still be settling what it left as a gone replica's."""
        last = None if self._outage is None else self._outage()
        return last is None or self._past(last, self._clock())

    def _past(self, outage: tuple[float, float | None], now: float) -> bool:
        ended = outage[1]
        return ended is not None and now - ended >= self._ttl_s
