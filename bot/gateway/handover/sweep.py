"""The sweep and the pruning of owner rows: what a lost notification or a gone owner left
waiting is seen to, and idle owner rows go.

* **The sweep** (every :data:`SWEEP_S`, and at start-up) reads every unsettled inbox entry
  with its session's owner: a notification that was lost is made up for; a session whose
  owner is gone is taken over (settling first what the gone replicas left, and what this
  replica left itself: :mod:`~bot.gateway.handover.settlement`).
* **Idle rows go.** Every :data:`PRUNE_S` a replica deletes the owner rows of settled
  sessions without a message for :data:`PRUNE_IDLE_S`, its own (forgotten first, under the
  session's lock) and those of gone replicas; the next message takes the session again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AsyncExitStack

import structlog

from bot.errors import StorageError
from bot.gateway.handover.ownership import Ownership
from bot.gateway.handover.settlement import Settlement, left_by_gone
from bot.gateway.sessions import Sessions
from bot.store import InboxStatus, Store
from bot.store.outage import repeat
from bot.store.session_owners import Unsettled

log = structlog.get_logger(__name__)

#: How often a replica sweeps the inbox for lost notifications and gone owners.
SWEEP_S = 1.0
#: How often a replica prunes owner rows, and how long a settled session stays without a
#: message before its row goes (its next message takes it again, in one statement)
PRUNE_S = 300.0
PRUNE_IDLE_S = 3600.0


class Sweep:
    """Sweeps and prunes for one :class:`~bot.gateway.handover.Handover` (module
    docstring); ``pull`` claims and queues a session's waiting entries, ``forget_dropped``
    forgets what was dropped from its queue before its take."""

    def __init__(
        self,
        *,
        store: Store,
        sessions: Sessions,
        ownership: Ownership,
        settlement: Settlement,
        pull: Callable[[str], Awaitable[object]],
        forget_dropped: Callable[[], None],
        clock: Callable[[], float],
        sweep_s: float = SWEEP_S,
        prune_s: float = PRUNE_S,
        prune_idle_s: float = PRUNE_IDLE_S,
    ) -> None:
        self._store = store
        self._sessions = sessions
        self._ownership = ownership
        self._settlement = settlement
        self._pull = pull
        self._forget_dropped = forget_dropped
        self._clock = clock
        self._sweep_s = sweep_s
        self._prune_s = prune_s
        self._prune_idle_s = prune_idle_s

    async def run(self) -> None:
        """Sweep every ``sweep_s`` and prune every ``prune_s``; lives until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._sweeping())
            group.create_task(self._pruning())

    async def _sweeping(self) -> None:
        await repeat("handover_sweep", self.sweep, lambda: self._sweep_s)

    async def sweep(self) -> int:
        """One look at every unsettled inbox entry: queue what waits for a session this
        replica owns and is not queued here, take over the sessions of gone owners (settling
        what they left). Start-up recovery on a shared database. Returns how many sessions
        were taken over."""
        self._forget_dropped()
        ownership = self._ownership
        if ownership.draining:
            return 0
        rows = await self._store.session_owners.unsettled()
        if not rows:
            return 0
        await self._settlement.settle_own(rows)
        live = await ownership.live()
        taken = 0
        for key, entries in _by_session(rows):
            owner = entries[0].owner
            if owner is not None and owner != ownership.me and owner in live:
                ownership.owned.discard(key)
                continue
            if owner != ownership.me:
                async with ownership.held(key):
                    won = await self._settlement.take_over(key, was=owner, live=live)
                if not won:
                    continue
                taken += 1
            elif any(left_by_gone(e, live) for e in entries):
                async with ownership.held(key):
                    await self._settlement.settle_gone(key, live)
            ownership.owned.add(key)
            if any(
                e.status is InboxStatus.RECEIVED and not self._sessions.is_live(e.envelope_id)
                for e in entries
            ):
                await self._pull(key)
        return taken

    async def _pruning(self) -> None:
        while True:
            await asyncio.sleep(self._prune_s)
            try:
                await self.prune()
            except StorageError as exc:
                # tried again at the next one
                log.warning("session_owners_prune_failed", error=str(exc))

    async def prune(self, *, idle_s: float | None = None) -> int:
        """Delete the owner rows of settled sessions that saw no message for ``idle_s``
        (default ``prune_idle_s``): this replica's, and those of replicas gone. Returns how
        many went.

        This replica forgets its own first, holding their sessions (so no claim of them
        runs meanwhile here); a claim needs the owner's row, so a session whose row went is
        claimed by nobody until a replica takes it again (its next message, or a sweep)."""
        ownership = self._ownership
        if ownership.draining:
            return 0
        idle_since = self._clock() - (self._prune_idle_s if idle_s is None else idle_s)
        rows = await self._store.session_owners.prunable(
            ownership.me, await ownership.live(), idle_since=idle_since
        )
        if not rows:
            return 0
        async with AsyncExitStack() as held:
            for key, owner in rows:
                if owner == ownership.me:
                    await held.enter_async_context(ownership.held(key))
                    ownership.owned.discard(key)
            deleted = await self._store.session_owners.prune(rows, idle_since=idle_since)
        if deleted:
            log.info("session_owners_pruned", sessions=len(deleted))
        return len(deleted)


def _by_session(rows: Sequence[Unsettled]) -> Iterator[tuple[str, list[Unsettled]]]:
    """``rows`` grouped by session, sessions in the order of their oldest entry."""
    groups: dict[str, list[Unsettled]] = {}
    for row in rows:
        groups.setdefault(row.session_key, []).append(row)
    yield from groups.items()
