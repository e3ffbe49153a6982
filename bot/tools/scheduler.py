"""The process-wide tool scheduler: per-session and per-kind limits, round-robin fairness.

Every executing call holds one scheduler slot. A call runs when its session is under
``per_session`` running calls and its kind is under its limit; when a slot frees, waiting
sessions are served in rotation, so one busy session cannot starve another. The wait queue
is bounded: :meth:`ToolScheduler.enqueue` returns ``None`` when it is full and the call gets a
retryable "busy" outcome.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType

from bot.tools.spec import ToolKind

_DEFAULT_KIND_LIMITS = MappingProxyType(
    {ToolKind.READ_ONLY: 16, ToolKind.WRITE: 4, ToolKind.EXECUTE: 4}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerLimits:
    per_session: int = 4
    per_kind: Mapping[ToolKind, int] = field(default_factory=lambda: _DEFAULT_KIND_LIMITS)
    max_queued: int = 256


class Lease:
    """One place in the scheduler. ``async with lease:`` waits for the grant and releases
    on exit (also when cancelled while waiting)."""

    __slots__ = ("future", "granted", "kind", "scheduler", "session")

    def __init__(self, scheduler: ToolScheduler, session: str, kind: ToolKind) -> None:
        self.scheduler = scheduler
        self.session = session
        self.kind = kind
        self.granted = False
        self.future: asyncio.Future[None] | None = None

    async def __aenter__(self) -> None:
        if self.granted:
            return
        assert self.future is not None
        try:
            await self.future
        except asyncio.CancelledError:
            if self.granted:
                self.scheduler._release(self)
            else:
                self.scheduler._abandon(self)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.scheduler._release(self)


class ToolScheduler:
    """Shared by every turn of the process (one per agent bundle)."""

    __slots__ = ("_by_kind", "_by_session", "_limits", "_queued", "_rotation", "_waiting")

    def __init__(self, limits: SchedulerLimits | None = None) -> None:
        self._limits = limits or SchedulerLimits()
        self._by_session: Counter[str] = Counter()
        self._by_kind: Counter[ToolKind] = Counter()
        self._waiting: dict[str, deque[Lease]] = {}
        self._rotation: deque[str] = deque()
        self._queued = 0

    @property
    def queued(self) -> int:
        return self._queued

    def running(self, session: str | None = None) -> int:
        if session is None:
            return sum(self._by_session.values())
        return self._by_session[session]

    def enqueue(self, session: str, kind: ToolKind) -> Lease | None:
        """A lease for one call (granted at once when nothing waits and limits allow), or
        ``None`` when the wait queue is full."""
        lease = Lease(self, session, kind)
        if not self._queued and self._fits(session, kind):
            self._grant(lease)
            return lease
        if self._queued >= self._limits.max_queued:
            return None
        lease.future = asyncio.get_running_loop().create_future()
        queue = self._waiting.get(session)
        if queue is None:
            queue = self._waiting[session] = deque()
            self._rotation.append(session)
        queue.append(lease)
        self._queued += 1
        self._pump()
        return lease

    def _fits(self, session: str, kind: ToolKind) -> bool:
        limit = self._limits.per_kind.get(kind, self._limits.per_session)
        return self._by_session[session] < self._limits.per_session and self._by_kind[kind] < limit

    def _grant(self, lease: Lease) -> None:
        lease.granted = True
        self._by_session[lease.session] += 1
        self._by_kind[lease.kind] += 1
        if lease.future is not None and not lease.future.done():
            lease.future.set_result(None)

    def _release(self, lease: Lease) -> None:
        if not lease.granted:
            return
        lease.granted = False
        self._by_session[lease.session] -= 1
        if not self._by_session[lease.session]:
            del self._by_session[lease.session]
        self._by_kind[lease.kind] -= 1
        self._pump()

    def _abandon(self, lease: Lease) -> None:
        queue = self._waiting.get(lease.session)
        if queue is not None and lease in queue:
            queue.remove(lease)
            self._queued -= 1
            if not queue:
                del self._waiting[lease.session]
                self._rotation.remove(lease.session)
        self._pump()

    def _pump(self) -> None:
        """Grant waiting leases, one session at a time in rotation; a served session moves
        to the back of the rotation."""
        progressed = True
        while progressed and self._rotation:
            progressed = False
            for _ in range(len(self._rotation)):
                session = self._rotation[0]
                queue = self._waiting[session]
                lease = next((w for w in queue if self._fits(session, w.kind)), None)
                self._rotation.rotate(-1)
                if lease is None:
                    continue
                queue.remove(lease)
                self._queued -= 1
                if not queue:
                    del self._waiting[session]
                    self._rotation.remove(session)
                self._grant(lease)
                progressed = True
                break
