"""Which replicas of a shared database are alive: this one, and those whose heartbeat is
recent.

A replica's row in ``replicas`` is refreshed every heartbeat (:mod:`bot.replicas`) and
deleted at a clean stop; one whose last heartbeat is older than the lease TTL
(``[replicas] lease_ttl_s``) belongs to a process that died or lost the database. What such a
replica left (the sessions it owned, the inbox entries it took, the approvals its turns
waited on) is for a live replica to settle; what a live replica holds is never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.store.replicas import Replicas


class Liveness:
    """This replica's id, and the replicas alive now, read fresh each time."""

    def __init__(
        self,
        replicas: Replicas,
        *,
        replica_id: str,
        ttl_s: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._replicas = replicas
        self._id = replica_id
        self._ttl_s = ttl_s
        self._clock = clock

    @property
    def replica_id(self) -> str:
        """This process's id (new at every start)."""
        return self._id

    async def live_replicas(self) -> frozenset[str]:
        """The ids of the replicas whose heartbeat is within the lease TTL, this one
        always among them (it is running this)."""
        rows = await self._replicas.live(since=self._clock() - self._ttl_s)
        return frozenset(r.id for r in rows) | {self._id}
