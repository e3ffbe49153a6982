"""Resumptions: a parked turn continues once its card is decided (docs/approvals.md,
"Parking and resumption").

A decision may be made anywhere: a click on this process, the web console, ``hatchway
approvals approve`` in another process, a replica, the card's own expiry. Whatever made
it, :class:`Resumptions` finds the parked rows whose card is no longer pending (at once
when the decision was made here, :meth:`Resumptions.nudge`; otherwise within its poll),
claims each (:meth:`~bot.store.parked.ParkedTurns.claim`: one conditional update, so a card
decided twice, or seen by two sweeps, resumes once), has the card show its outcome, and
queues the resumption into the session's queue like a message
(:attr:`~bot.turn.TurnIdentity.resume`): it never runs beside another turn of that session,
takes a turn slot, and answers the original message through the outbox. With several
replicas only the replica that owns the session claims it (``owns``, which takes a session
whose owner is gone first), so the resumption joins the queue of the session's other turns;
the parked turns of a replica that died are adopted by the replica that takes their session
over (:func:`settle_at_start`). A parked card whose
``approval.timeout_s`` passes is expired here (reason ``timeout``), and its turn resumed so
that the model is told. At a start (and, with several replicas, at every sweep, for the
replicas that are gone), :func:`settle_at_start` parks the turns a stop or a kill left
waiting and gives back the claims of resumptions that never began.

**The idle gate.** Nothing is parked most of the time, and a sweep reads two to four
statements. So the sweep runs only while the table may hold a row: from the start until a
sweep finds it empty, and again once a turn of this process records a row
(:attr:`~bot.store.parked.ParkedTurns.held` moves), a decision is made here
(:meth:`Resumptions.nudge`), a reload removes something, or another replica says it
recorded one (the :data:`PARKED` signal). An idle process reads nothing, but for one
``SELECT … LIMIT 1`` every :data:`IDLE_CHECK_S`, which finds a row written by a process
whose signal was lost. A decision made in another process (``hatchway approvals approve``)
is seen by the next sweep: its row exists, so the sweep runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable

import structlog

from bot.envelope import IngressEnvelope, envelope_from_json
from bot.errors import StorageError
from bot.store import InboxStatus, Store, UnitOfWork
from bot.store.parked import PARKED, ParkState
from bot.tools.parking import adopt_waiting
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

#: How often an idle process checks, with one statement, for a row it was not told of.
IDLE_CHECK_S = 30.0

Enqueue = Callable[[TurnIdentity], None]
#: Expires the parked turns' cards that no longer fit the configuration (a reload's).
ExpireChanged = Callable[[], Awaitable[int]]
#: Whether this process runs a session's turns now (taking it over when its owner is gone).
Owns = Callable[[str], Awaitable[bool]]


class Resumptions:
    """Finds decided parked turns and queues their resumptions. One per daemon."""

    def __init__(
        self,
        *,
        store: Store,
        enqueue: Enqueue,
        expire_due: Callable[[], Awaitable[int]],
        show_outcome: Callable[[str], Awaitable[None]],
        owner: str | None = None,
        poll_s: float = 1.0,
        live: Callable[[], Awaitable[frozenset[str]]] | None = None,
        expire_changed: ExpireChanged | None = None,
        idle_check_s: float = IDLE_CHECK_S,
        clock: Callable[[], float] = time.monotonic,
        owns: Owns | None = None,
    ) -> None:
        self._store = store
        self._enqueue = enqueue
        self._expire_due = expire_due
        self._show_outcome = show_outcome
        self._owner = owner
        self._poll_s = poll_s
        self._live = live
        self._owns = owns
        #: the replicas alive when the rows of gone ones were last adopted (None: never)
        self._adopted_for: frozenset[str] | None = None
        self._nudged = asyncio.Event()
        self._expire_changed = expire_changed
        self._changed = False
        # the idle gate (module docstring): armed from the start until a sweep finds no row
        self._idle_check_s = idle_check_s
        self._clock = clock
        self._armed = True
        self._wakes = 0
        self._held = store.parked.held
        self._check_at = 0.0

    @property
    def idle(self) -> bool:
        """Whether the sweep is gated off (no row was there at the last look)."""
        return not self._armed

    def _wake(self) -> None:
        self._wakes += 1
        self._armed = True

    def nudge(self, approval_id: str = "") -> None:
        """A card was decided here that no turn of this process waits on: look now."""
        self._wake()
        self._nudged.set()

    def heard(self, approval_id: str) -> None:
        """Another replica recorded a parked row (the :data:`PARKED` signal)."""
        self._wake()

    def reloaded(self) -> None:
        """The configuration was reloaded: the next sweep expires the cards of the parked
        turns that no longer fit it (:mod:`bot.gateway.parked_config`: reason ``tool
        removed by reload`` and the like), and then resumes their turns, which run nothing."""
        self._wake()
        self._changed = True
        self._nudged.set()

    async def run(self) -> None:
        """Sweep every ``poll_s`` (or at once when nudged) while the gate is open, until
        cancelled."""
        await self._store.signals.listen(PARKED, self.heard)
        try:
            while True:
                self._nudged.clear()
                try:
                    await self.tick()
                except StorageError as exc:
                    log.warning("parked_turn_sweep_failed", error=str(exc))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._poll_s):
                        await self._nudged.wait()
        finally:
            await self._store.signals.unlisten(PARKED, self.heard)

    async def tick(self) -> int:
        """One turn of :meth:`run`: a :meth:`sweep` when the gate is open (module
        docstring), nothing otherwise; once every ``idle_check_s``, an idle process looks
        whether a row is there with one statement. Returns how many were queued."""
        held = self._store.parked.held
        if not self._armed:
            if held != self._held:
                self._armed = True
            elif self._clock() >= self._check_at:
                self._check_at = self._clock() + self._idle_check_s
                self._armed = await self._store.parked.any()
            if not self._armed:
                return 0
        wakes = self._wakes
        queued = await self.sweep()
        if queued or await self._store.parked.any():
            return queued
        # closed only when nothing was recorded here, or woke it, meanwhile
        if wakes == self._wakes and held == self._store.parked.held:
            self._armed = False
            self._held = held
            self._check_at = self._clock() + self._idle_check_s
        return queued

    async def sweep(self) -> int:
        """Expire the parked cards whose life is over, then queue a resumption for every
        parked turn whose card is decided and that this process claims. Returns how many
        were queued."""
        if self._live is not None:
            # several replicas: the parked turns a replica that died left are adopted by
            # the replica that runs their session now; looked for when one has gone
            live = await self._live()
            if live != self._adopted_for and await settle_at_start(
                self._store, owner=self._owner, live=live, owns=self._owns
            ):
                self._adopted_for = live
        if self._expire_changed is not None and self._changed:
            self._changed = False
            try:
                await self._expire_changed()
            except BaseException:
                self._changed = True  # a failed sweep tries again
                raise
        await self._expire_due()
        queued = 0
        for row in await self._store.parked.decided():
            if self._owns is not None and not await self._owns(row.session_key):
                continue  # another live replica runs its session: resumed there
            if not await self._store.parked.claim(row.approval_id, self._owner):
                continue  # resumed by another sweep or replica
            entry = await self._store.inbox.get(row.inbox)
            envelope = _envelope(entry.payload) if entry is not None else None
            if entry is None or entry.status is not InboxStatus.PARKED or envelope is None:
                log.warning("parked_turn_without_entry", approval_id=row.approval_id)
                await self._store.parked.drop(row.approval_id)
                continue
            await self._show_outcome(row.approval_id)
            turn = TurnIdentity(
                turn_id=uuid.uuid4().hex,
                session_key=row.session_key,
                envelope=envelope,
                resume=row.approval_id,
            )
            log.info(
                "parked_turn_resumption_queued",
                approval_id=row.approval_id,
                session=row.session_key,
                turn_id=turn.turn_id,
            )
            self._enqueue(turn)
            queued += 1
        return queued


def _envelope(payload: str) -> IngressEnvelope | None:
    try:
        return envelope_from_json(payload)
    except (ValueError, KeyError, TypeError):
        return None


async def settle_at_start(
    store: Store,
    *,
    owner: str | None,
    live: frozenset[str] | None = None,
    owns: Owns | None = None,
) -> bool:
    """At a start: park the turns that a stop or a kill left ``waiting``
    (:func:`~bot.tools.parking.adopt_waiting`), and give back the claims of resumptions
    that were queued but never began (their entry still ``parked``); a resumption that
    began and was cut off leaves its entry ``processing`` and its row ``resuming`` for
    recovery, which parks it again marked cut off (its batch's outcomes were not recorded:
    they are recorded with the row's removal). ``live``: the replicas alive (their rows
    are theirs; None for one process): then only the rows of replicas gone are touched,
    each by the replica that runs its session now (``owns``, which takes the session over
    when its owner is gone), which adopts them: the rows and their cards name it from then
    on (its reminder sweep sends their reminders). Whether every such row was seen to
    (False: some session is another live replica's, which adopts its rows: look again
    later)."""
    mine: dict[str, bool] = {}

    async def is_mine(session_key: str) -> bool:
        if owns is None:
            return True
        if session_key not in mine:
            mine[session_key] = await owns(session_key)
        return mine[session_key]

    if live is None:
        rows = await store.parked.rows(states=(ParkState.WAITING, ParkState.RESUMING))
        await adopt_waiting(store, owner=owner, gone=None)
    else:
        rows = await store.parked.of_gone(live)
        if not rows:
            return True
        gone = frozenset(r.owner for r in rows if r.owner is not None)
        await adopt_waiting(store, owner=owner, gone=gone, owns=is_mine)
    for row in rows:
        if row.state is ParkState.WAITING:
            continue  # parked above
        if live is not None and not await is_mine(row.session_key):
            continue  # another live replica runs its session: that one adopts it
        now = time.time()
        if row.state is ParkState.PARKED:
            if live is not None and owner is not None:
                await store.commit(UnitOfWork().adopt_parked(row.approval_id, owner=owner, at=now))
                log.info("parked_turn_adopted", approval_id=row.approval_id, was=row.owner)
            continue
        if row.state is not ParkState.RESUMING:
            continue
        entry = await store.inbox.get(row.inbox)
        if entry is not None and entry.status is InboxStatus.PARKED:
            await store.parked.unclaim(row.approval_id, at=now)
            if live is not None and owner is not None:
                await store.commit(UnitOfWork().adopt_parked(row.approval_id, owner=owner, at=now))
        elif entry is None or entry.status is not InboxStatus.PROCESSING:
            await store.parked.drop(row.approval_id)
        # else: the resumption began and was cut off before its batch's outcomes were
        # recorded: recovery parks it again, marked cut off (bot.gateway.recovery)
    return all(mine.values())
