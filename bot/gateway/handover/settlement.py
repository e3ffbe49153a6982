"""Settlement: what a replica cut off left in the inbox, settled before anything newer of
its session runs.

* **Taking a session over** (at a sweep, or by the admission that finds its owner gone)
  first settles the entries the gone replicas left, with start-up recovery's rules
  (:mod:`~bot.gateway.recovery`): what they were running is settled by its replies,
  answered, or its sender told to ask again, and what they had claimed but not begun is
  released and queued again, before anything newer of the session runs. Entries of a live
  replica are never touched by another.
* **A replica settles what it left itself.** A turn that met the database gone leaves its
  entry ``processing`` on a replica that lives on (:mod:`~bot.gateway.sessions`). The sweep
  settles this replica's own ``processing`` entries that no turn here has in hand any more
  by the same rules, once the database answers again, whichever replica owns their session
  by then; a sender told to ask again is told of an outage, not of a restart. It reads
  which entries are in hand before it reads the entry again: a turn lets go of its entry
  only after its outcome was written (or kept to be written), so an entry still
  ``processing`` on the second read is one no turn here will settle.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import structlog

from bot.gateway.handover.ownership import Ownership
from bot.gateway.recovery import CutOffBy
from bot.gateway.sessions import Sessions
from bot.store import InboxStatus, Store
from bot.store.inbox import InboxEntry
from bot.store.session_owners import Unsettled

log = structlog.get_logger(__name__)

RecoverEntries = Callable[[Sequence[InboxEntry], CutOffBy], Awaitable[object]]
"""Start-up recovery's rules applied to the given cut-off entries: of replicas gone
(``restart``), or this replica's own that its database outage cut off (``outage``)."""


class Settlement:
    """Takes sessions over from gone owners and settles what was cut off (module
    docstring). One per :class:`~bot.gateway.handover.Handover`."""

    def __init__(
        self,
        *,
        store: Store,
        sessions: Sessions,
        ownership: Ownership,
        recover: RecoverEntries,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._sessions = sessions
        self._ownership = ownership
        self._recover = recover
        self._clock = clock

    async def take_over(self, key: str, *, was: str | None, live: frozenset[str]) -> bool:
        """Take ``key`` from ``was`` (gone, or None), then settle what gone replicas left
        in it; False when another replica took it first."""
        me = self._ownership.me
        if not await self._store.session_owners.take(key, me, was=was, at=self._clock()):
            return False
        self._ownership.owned.add(key)
        if was is not None:
            log.info("session_taken_over", session=key, was=was)
        await self.settle_gone(key, live)
        return True

    async def settle_gone(self, key: str, live: frozenset[str]) -> None:
        """Settle the entries of ``key`` that gone replicas left: those they were running by
        recovery's rules, those they had claimed released (the pull queues them again)."""
        rows = await self._store.session_owners.unsettled(key)
        cut_off: list[InboxEntry] = []
        for unsettled in (e for e in rows if left_by_gone(e, live)):
            if unsettled.status is InboxStatus.PROCESSING:
                entry = await self._store.inbox.get(unsettled.key)
                if entry is not None:
                    cut_off.append(entry)
            elif unsettled.replica_id is not None:
                await self._store.inbox.release(unsettled.key, unsettled.replica_id)
        if cut_off:
            log.info("session_recovering", session=key, entries=len(cut_off))
            await self._recover(cut_off, CutOffBy.RESTART)

    async def settle_own(self, rows: Sequence[Unsettled]) -> None:
        """Settle this replica's ``processing`` entries that no turn here has in hand (the
        module docstring), session by session."""
        me = self._ownership.me
        mine = [e for e in rows if e.status is InboxStatus.PROCESSING and e.replica_id == me]
        if not mine or not self._ownership.replica.steady():
            return
        in_hand = self._sessions.in_hand()
        for key in dict.fromkeys(e.session_key for e in mine if e.key not in in_hand):
            async with self._ownership.held(key):
                await self._settle_left_here(key)

    async def _settle_left_here(self, key: str) -> None:
        # in this order: what is in hand, then the entries (a turn that ends in between has
        # written its outcome by the time it lets go, and reads settled here)
        in_hand = self._sessions.in_hand()
        rows = await self._store.session_owners.unsettled(key)
        left: list[InboxEntry] = []
        for unsettled in rows:
            if (
                unsettled.status is InboxStatus.PROCESSING
                and unsettled.replica_id == self._ownership.me
                and unsettled.key not in in_hand
            ):
                entry = await self._store.inbox.get(unsettled.key)
                if entry is not None and entry.status is InboxStatus.PROCESSING:
                    left.append(entry)
        if left and not self._ownership.draining:
            log.info("session_recovering", session=key, entries=len(left), left_here=True)
            await self._recover(left, CutOffBy.OUTAGE)


def left_by_gone(entry: Unsettled, live: frozenset[str]) -> bool:
    """Whether ``entry`` is a gone replica's to settle: taken by a replica not alive, or
    running with nobody named (written before replicas were)."""
    if entry.replica_id is None:
        return entry.status is InboxStatus.PROCESSING
    return entry.replica_id not in live
