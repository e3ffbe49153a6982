"""The waiting side of approval requests: the turns of this process that wait on a row.

Kept apart from the card (:mod:`bot.approval.backchannel`) and the answers
(:mod:`bot.approval.card_flow`) because both of those end a wait: an answer wakes the turn, and
the runtime's own decision (a timeout, a cancel, a shutdown) expires the row and wakes it too.
One :class:`Waits` per daemon holds the in-process wake-up events, so a decision made here
wakes its turn at once, while the re-read every ``poll_interval_s`` notices one written by
another process (``hatchway approvals approve``, another replica whose notification was lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from bot.approval import audit, reasons
from bot.approval.reasons import RuntimeReason
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, Resolution

log = structlog.get_logger(__name__)


class Waits:
    """The approval rows this process waits on, and the runtime's expiry that ends a wait."""

    def __init__(
        self, store: Store, clock: Callable[[], float], *, poll_interval_s: float = 1.0
    ) -> None:
        self._store = store
        self._clock = clock
        self._poll_s = poll_interval_s
        self._wakeups: dict[str, asyncio.Event] = {}
        #: the waits that may park (their turn recorded a parked turn), and those told to
        #: park now (a stop: :meth:`park_all`)
        self._parkable: set[str] = set()
        self._park_now: set[str] = set()
        #: told the id of a row decided here that no turn of this process waits on (a
        #: parked turn's resumption: :mod:`bot.approval.parking`)
        self.unwaited: Callable[[str], None] | None = None

    def open(self, approval_id: str) -> asyncio.Event:
        """Start waiting on ``approval_id``: the event a decision made here sets."""
        wakeup = self._wakeups[approval_id] = asyncio.Event()
        return wakeup

    def release(self, approval_id: str) -> None:
        """Stop waiting on ``approval_id`` (the ask is over, whatever its outcome)."""
        self._wakeups.pop(approval_id, None)
        self._parkable.discard(approval_id)
        self._park_now.discard(approval_id)

    def parkable(self, approval_id: str) -> None:
        """The wait on ``approval_id`` may park: a stop parks it instead of expiring it."""
        self._parkable.add(approval_id)

    def unparkable(self, approval_id: str) -> None:
        """The wait on ``approval_id`` may not park after all: it waits in its turn, and a
        stop expires it."""
        self._parkable.discard(approval_id)
        self._park_now.discard(approval_id)

    def may_park(self, approval_id: str) -> bool:
        return approval_id in self._parkable

    def park_all(self) -> int:
        """A stop: every wait that may park parks now. Returns how many."""
        waiting = [a for a in self._parkable if a in self._wakeups]
        for approval_id in waiting:
            self._park_now.add(approval_id)
            self._wakeups[approval_id].set()
        return len(waiting)

    def waiting(self, approval_id: str) -> bool:
        """Whether a turn of this process waits on ``approval_id`` (and will tell its
        conversation the outcome itself)."""
        return approval_id in self._wakeups

    def wake(self, approval_id: str) -> None:
        """A decision on ``approval_id`` was written: wake the turn waiting on it, if any."""
        event = self._wakeups.get(approval_id)
        if event is not None:
            event.set()
        elif self.unwaited is not None:
            self.unwaited(approval_id)

    async def until_decided(
        self,
        record: ApprovalRecord,
        wakeup: asyncio.Event,
        *,
        park_at: float | None = None,
        park_by: float | None = None,
    ) -> bool:
        """Until the row is decided, or its ``expires_at`` passes on the service's clock (the
        same clock a late click is judged by), then expire it. With ``park_at`` (a wait that
        may park), until that time or a stop instead: True then, the row still pending; and
        also, with ``park_by``, until that loop time (the turn's budget is about to run out:
        :data:`bot.turn.PARK_BY`), so that the budget parks the wait instead of cancelling
        it."""
        loop = asyncio.get_running_loop()
        while True:
            wakeup.clear()  # before reading, so a click landing after the read still wakes us
            current = await self._store.approvals.get(record.id)
            if current is None or current.status is not ApprovalStatus.PENDING:
                return False
            now = self._clock()
            remaining = record.expires_at - now
            if remaining <= 0:
                await self.expire(current, RuntimeReason.TIMEOUT)
                return False
            if park_at is not None:
                if record.id in self._park_now or now >= park_at:
                    return True
                remaining = min(remaining, park_at - now)
                if park_by is not None:
                    left = park_by - loop.time()
                    if left <= 0:
                        log.info("approval_parks_before_turn_budget", approval_id=record.id)
                        return True
                    remaining = min(remaining, left)
            try:
                async with asyncio.timeout(min(self._poll_s, remaining)):
                    await wakeup.wait()
            except TimeoutError:
                pass

    async def expire(self, record: ApprovalRecord, why: RuntimeReason) -> bool:
        """Runtime decision: mark a pending row expired (audited). False if already decided."""
        expired = Resolution(
            status=ApprovalStatus.EXPIRED, decided_by=reasons.RUNTIME, reason=why, at=self._clock()
        )
        won = await self._store.approvals.resolve(
            record.id, expired, audit=audit.entry_for_resolution(record, expired)
        )
        if won:
            self.wake(record.id)
            log.info("approval_expired", approval_id=record.id, tool=record.tool, reason=why)
        return won
