"""The daemon among its replicas: the lease keeper it joins and the liveness it reads.

Only PostgreSQL (``[storage] url``) lets several replicas share a database; with SQLite both
are None and nothing of them runs: roles are this process's at once, nothing is written for
them, and the parts that settle what a gone replica left treat every row as this process's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.store import Store
from bot.store.liveness import Liveness

if TYPE_CHECKING:
    from bot.replicas import LeaseKeeper


async def join_replicas(
    store: Store, settings: Settings, clock: Callable[[], float]
) -> LeaseKeeper | None:
    """The lease keeper, joined, when several replicas may share the database
    (PostgreSQL, ``[storage] url``); None with SQLite: one process, nothing of it runs
    (roles are this process's at once, and nothing is written for them)."""
    if not settings.storage.url:
        return None
    from bot.replicas import LeaseKeeper  # PostgreSQL only

    keeper = LeaseKeeper(store.replicas, settings.replicas, clock=clock)
    await keeper.join()
    return keeper


def liveness_for(
    keeper: LeaseKeeper | None, store: Store, settings: Settings, clock: Callable[[], float]
) -> Liveness | None:
    """Which replicas are alive, for the parts that settle what a gone one left (its
    sessions, its pending approvals); None with SQLite. A replica counts as gone once
    its heartbeat is older than the lease TTL plus the clock skew allowed, so a live
    one whose clock is behind is never taken for gone."""
    if keeper is None:
        return None
    replicas = settings.replicas
    return Liveness(
        store.replicas,
        replica_id=keeper.replica_id,
        ttl_s=replicas.lease_ttl_s + replicas.max_clock_skew_s,
        clock=clock,
        outage=keeper.last_outage,
    )
