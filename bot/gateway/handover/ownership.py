"""What a replica knows of who owns which session, and the lock that orders its own
claims, takeovers and pulls of one session.

What a replica remembers owning is a hint: its claims need its row in
``store.session_owners``, and a sweep corrects it (:mod:`~bot.gateway.handover.sweep`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.store.liveness import Liveness

#: The notification channel of handovers; its payload names the owner and the session.
HANDOVER = "hatchway_handover"
#: How many sessions a replica remembers as owned elsewhere (which statement to try first)
REMEMBERED_OWNERS = 10_000


class Ownership:
    """This replica's view of session ownership, shared by the parts of its
    :class:`~bot.gateway.handover.Handover`."""

    def __init__(self, replica: Liveness) -> None:
        self.replica = replica
        #: sessions this replica owns, as far as it knows (a sweep corrects it)
        self.owned: set[str] = set()
        #: the replicas alive at the last fresh read (enough to hand a message over; a
        #: takeover reads again)
        self.seen_live: frozenset[str] = frozenset()
        #: the replica is stopping (:meth:`~bot.gateway.handover.Handover.drain`)
        self.draining = False
        #: sessions last seen owned by another live replica, oldest first (a hint only)
        self._elsewhere: dict[str, None] = {}
        #: per session, the claim, takeover or pull running and those waiting for it
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @property
    def me(self) -> str:
        return self.replica.replica_id

    def is_elsewhere(self, key: str) -> bool:
        """Whether ``key`` was last seen owned by another replica (a hint)."""
        return key in self._elsewhere

    def seen_elsewhere(self, key: str) -> None:
        """Remember that ``key`` was owned by another replica (a hint: which statement to
        try first; the oldest are forgotten)."""
        self._elsewhere.pop(key, None)
        self._elsewhere[key] = None
        while len(self._elsewhere) > REMEMBERED_OWNERS:
            del self._elsewhere[next(iter(self._elsewhere))]

    def forget_elsewhere(self, key: str) -> None:
        self._elsewhere.pop(key, None)

    async def live(self) -> frozenset[str]:
        """The replicas alive now (this one always: it is running this)."""
        self.seen_live = await self.replica.live_replicas()
        return self.seen_live

    @asynccontextmanager
    async def held(self, key: str) -> AsyncIterator[None]:
        """One claim, takeover or pull of ``key`` at a time in this process (so queued
        turns keep inbox order); the lock is dropped once nobody holds or awaits it."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
