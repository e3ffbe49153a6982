"""One tenure of a lease this process holds: until when it may work, and what to stop.

A tenure's *fence* is the moment (on the event loop's monotonic clock) its holder must have
stopped the role's work: ``[replicas] lease_ttl_s - max_clock_skew_s`` after the last
renewal it sent and saw succeed. A timer on the loop fires it, so a renewal that hangs (a
database that stopped answering) cannot hold the fence back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import structlog

log = structlog.get_logger(__name__)


@dataclass(slots=True, eq=False)
class Tenure:
    """The lease ``name`` held as its ``generation``-th tenure (the fencing token).

    ``work`` is the task doing the role's work; :meth:`fence` cancels it. ``taken_at`` is
    when the statement that granted it was sent (loop time): a heartbeat sent before then
    cannot have renewed it, so it is not judged by that heartbeat's answer."""

    name: str
    generation: int
    taken_at: float
    fenced: bool = False
    work: asyncio.Task[None] | None = None
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False)

    def fence_at(self, when: float) -> None:
        """Stop at loop time ``when`` unless moved again (each renewal moves it later)."""
        if self.fenced:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_at(when, self.fence, "not renewed in time")

    def fence(self, why: str, *, lost: bool = True) -> None:
        """The tenure is over: cancel its work (at once, without waiting for the database).
        ``lost`` false: the holder is stopping, nothing went wrong."""
        if self.fenced:
            return
        self.fenced = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if lost:
            log.warning("lease_lost", lease=self.name, generation=self.generation, reason=why)
        else:
            log.info("lease_ending", lease=self.name, generation=self.generation, reason=why)
        if self.work is not None and not self.work.done():
            self.work.cancel()

    def end(self) -> None:
        """The holder ended the tenure itself: no fence will fire."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
