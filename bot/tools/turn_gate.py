"""The per-turn concurrency gate: shared calls overlap, an exclusive call is a FIFO barrier.

Entries are granted strictly in arrival order: a shared entry queued behind an exclusive one
waits for it even while other shared entries are running, so a later read never overtakes a
queued write.
"""

from __future__ import annotations

import asyncio
from collections import deque
from types import TracebackType


class _Entry:
    __slots__ = ("exclusive", "future", "gate")

    def __init__(self, gate: TurnGate, *, exclusive: bool) -> None:
        self.gate = gate
        self.exclusive = exclusive
        self.future: asyncio.Future[None] | None = None

    async def __aenter__(self) -> None:
        gate = self.gate
        if gate._try_now(self):
            return
        loop = asyncio.get_running_loop()
        self.future = loop.create_future()
        gate._queue.append(self)
        try:
            await self.future
        except asyncio.CancelledError:
            if self.future.done() and not self.future.cancelled():
                gate._release(self)  # granted, then cancelled before the body ran
            else:
                gate._queue.remove(self)
                gate._pump()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.gate._release(self)


class TurnGate:
    """Shared/exclusive FIFO gate of one turn. Enter with ``async with gate.hold(...)``.

    The order of entry is the order in which ``__aenter__`` first runs: the pipeline starts
    call tasks in the model's order and enters the gate before anything else awaits.
    """

    __slots__ = ("_exclusive_active", "_queue", "_shared_active")

    def __init__(self) -> None:
        self._queue: deque[_Entry] = deque()
        self._shared_active = 0
        self._exclusive_active = False

    def hold(self, *, exclusive: bool) -> _Entry:
        return _Entry(self, exclusive=exclusive)

    def _fits(self, entry: _Entry) -> bool:
        if entry.exclusive:
            return not self._exclusive_active and self._shared_active == 0
        return not self._exclusive_active

    def _grant(self, entry: _Entry) -> None:
        if entry.exclusive:
            self._exclusive_active = True
        else:
            self._shared_active += 1

    def _try_now(self, entry: _Entry) -> bool:
        if self._queue or not self._fits(entry):
            return False
        self._grant(entry)
        return True

    def _release(self, entry: _Entry) -> None:
        if entry.exclusive:
            self._exclusive_active = False
        else:
            self._shared_active -= 1
        self._pump()

    def _pump(self) -> None:
        while self._queue and self._fits(self._queue[0]):
            entry = self._queue.popleft()
            self._grant(entry)
            if entry.future is not None and not entry.future.done():
                entry.future.set_result(None)
