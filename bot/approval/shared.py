"""Approvals across replicas: whose pending requests a start or a stop expires, and how a
decision made on one replica wakes the turn waiting on another.

Each request's row names the replica whose turn waits on it (``replica_id``). Where several
replicas share the database (PostgreSQL, :class:`~bot.store.liveness.Liveness` given):

* a click, a reaction, the web console or ``hatchway approvals`` may reach any replica; the
  one it reaches decides the row (the same single-use conditional update, approver rules and
  fingerprint check as ever), then sends a notification on :data:`APPROVALS` with the
  approval's id; the waiting replica wakes at once (its ask also re-reads the row about
  every second, in case the notification is lost), and it alone edits the cards;
* a start expires only the pending requests of replicas that are gone (no heartbeat within
  the lease TTL), never a live one's; so does the watch, every :data:`SWEEP_S`, so a request
  whose replica died is expired, its cards edited and its conversation told, without waiting
  for another start;
* a stop expires only this replica's own pending requests;
* a turn parks only while every live replica advertises parking (:meth:`SharedApprovals.
  can_park`, asked as the card is posted and again as its turn would park): during a
  rolling upgrade from a release that does not park, a card waits in its turn and a stop
  expires it, as with ``approval.park = false``.

One process (SQLite, no liveness) keeps its rules: a start or a stop expires every pending
request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog

from bot.approval.reasons import RuntimeReason
from bot.errors import StorageError
from bot.store import Store
from bot.store.approvals import ApprovalRecord
from bot.store.liveness import Liveness
from bot.store.outage import repeat
from bot.store.replicas import PARK

log = structlog.get_logger(__name__)

#: The notification channel of decisions; its payload is the approval's id.
APPROVALS = "hatchway_approvals"
#: How often a replica looks for pending requests of replicas that are gone.
SWEEP_S = 5.0


class SharedApprovals:
    """The part of the approval service that knows about other replicas (module
    docstring); with no liveness (one process), every rule is the single process's."""

    def __init__(self, store: Store, liveness: Liveness | None = None) -> None:
        self._store = store
        self._liveness = liveness
        #: the replicas that kept parking off at the last look (logged when it changes)
        self._without_parking: frozenset[str] = frozenset()

    async def can_park(self) -> bool:
        """Whether a turn may park now: always for one process; with several replicas,
        only while every live one advertises parking (a replica of a release that does not
        park would expire a parked turn's card, or tell its conversation to ask again).
        Says so once in the log when that changes. One read, as a card is posted and again
        as its turn would park (a replica that does not park may have come up meanwhile)."""
        if self._liveness is None:
            return True
        try:
            lacking = await self._liveness.lacking(PARK)
        except StorageError as exc:
            log.warning("parking_check_failed", error=str(exc))
            return False
        ids = frozenset(r.id for r in lacking)
        if ids != self._without_parking:
            if ids:
                log.warning(
                    "parking_off_during_upgrade",
                    replicas=sorted(ids),
                    hosts=sorted({f"{r.host}:{r.pid}" for r in lacking}),
                    hint="a live replica runs a release that does not park: cards wait in "
                    "their turns and a stop expires them (as with approval.park = false) until "
                    "it is upgraded or gone",
                )
            else:
                log.info("parking_on", replicas_upgraded=sorted(self._without_parking))
            self._without_parking = ids
        return not ids

    @property
    def replica_id(self) -> str | None:
        """The id a new request's row records (None: one process)."""
        return None if self._liveness is None else self._liveness.replica_id

    async def expirable(
        self, pending: Sequence[ApprovalRecord], why: RuntimeReason
    ) -> list[ApprovalRecord]:
        """Of the pending requests, those a start (``restart``: of replicas gone) or a stop
        (``shutdown``: this replica's) may expire; all of them for one process."""
        if self._liveness is None:
            return list(pending)
        me = self._liveness.replica_id
        if why is RuntimeReason.SHUTDOWN:
            return [r for r in pending if r.replica_id == me]
        live = await self._liveness.live_replicas()
        return [r for r in pending if r.replica_id not in live]

    async def decided(self, record: ApprovalRecord) -> None:
        """``record`` was decided here: wake the replica whose turn waits on it, when that
        is another one. A lost notification costs the waiting turn up to its poll."""
        if record.replica_id is None or record.replica_id == self.replica_id:
            return
        try:
            await self._store.signals.notify(APPROVALS, record.id)
        except StorageError as exc:
            log.warning("approval_signal_failed", approval_id=record.id, error=str(exc))

    async def watch(
        self, wake: Callable[[str], None], expire_gone: Callable[[], Awaitable[int]]
    ) -> None:
        """Hear decisions made elsewhere (``wake`` with each approval id) and expire the
        requests of replicas that are gone every :data:`SWEEP_S`; lives until cancelled.
        Nothing to do for one process."""
        if self._liveness is None:
            await asyncio.Event().wait()
        await self._store.signals.listen(APPROVALS, wake)
        try:
            await repeat("approval_sweep", expire_gone, lambda: SWEEP_S)
        finally:
            await self._store.signals.unlisten(APPROVALS, wake)
