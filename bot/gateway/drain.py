"""Drain: the gateway stops taking messages and lets running turns finish.

:class:`Drain` counts the turns running now; once :meth:`Drain.drain` begins, its admission
step :meth:`Drain.refuse_new` turns every new message away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog

from bot.errors import StorageUnavailable
from bot.gateway.admission import Admit, Arrival
from bot.turn import CancelReason

log = structlog.get_logger(__name__)

#: How long cancelled turns get to end after the drain's own timeout.
CANCEL_GRACE_S = 10.0


class Drain:
    """Whether the gateway accepts messages, and how many turns are running."""

    def __init__(self) -> None:
        self._accepting = True
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def active_turns(self) -> int:
        return self._active

    @property
    def draining(self) -> bool:
        """Shutdown began: no new message is taken (with several replicas: none runs here)."""
        return not self._accepting

    def refuse_new(self, arrival: Arrival, call_next: Admit) -> Awaitable[None]:
        """Admission step (one process): once draining began, a message is not taken. It
        is refused as when the database cannot be reached
        (:class:`~bot.errors.StorageUnavailable`), so the adapter leaves the platform's
        event unconfirmed (a Telegram update, a Slack journal row, a Discord message behind
        the watermark) and it is answered after the restart. Dropping it would confirm it
        to the platform, and it would be lost."""
        if not self._accepting:
            log.info("envelope_refused_shutting_down")
            raise StorageUnavailable("this process is stopping: the message is left for later")
        return call_next(arrival)

    def turn(self) -> Drain:
        """Counts one running turn for as long as the block runs (``with drain.turn():``;
        the drain is its own context manager: no generator per turn)."""
        return self

    def __enter__(self) -> None:
        self._active += 1
        self._idle.clear()

    def __exit__(self, *exc: object) -> None:
        self._active -= 1
        if self._active == 0:
            self._idle.set()

    async def drain(self, timeout_s: float, cancel_running: Callable[[CancelReason], None]) -> bool:
        """Stop accepting; wait up to ``timeout_s`` for running turns, then cancel them
        (``cancel_running(CancelReason.SHUTDOWN)``) and give them :data:`CANCEL_GRACE_S` to end.

        Returns True when every turn finished on its own."""
        self._accepting = False
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
            return True
        except TimeoutError:
            cancel_running(CancelReason.SHUTDOWN)
            try:
                async with asyncio.timeout(CANCEL_GRACE_S):
                    await self._idle.wait()
            except TimeoutError:
                log.warning("drain_incomplete", active=self._active)
            return False
