"""What a task that runs every second or so logs while the database cannot be reached.

A sweep, a scheduler tick or a retry loop fails at every turn while PostgreSQL is down
(:class:`~bot.errors.StorageUnavailable`): a traceback each time would bury the one line
that matters. :class:`OutageLog` says it once, as a warning naming the task and the error
(``<task>_paused``), then nothing more but a reminder every :data:`REMIND_S` while it lasts,
and one info line (``<task>_resumed``, with how long) at the task's first success after it.
Any other failure is a bug or a fault of its own and keeps its traceback (``<task>_failed``),
every time. :func:`repeat` is the loop such a task runs, with its :class:`OutageLog`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from bot.backoff import cancel_requested
from bot.errors import StorageUnavailable

log = structlog.get_logger(__name__)

REMIND_S = 60.0
"""How often a task still paused by an outage says so again."""


class OutageLog:
    """The log lines of one periodic task through database outages (module docstring).
    ``quiet``: the failures logged as an outage (the database unreachable, by default)."""

    def __init__(
        self,
        task: str,
        *,
        quiet: tuple[type[BaseException], ...] = (StorageUnavailable,),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._task = task
        self._quiet = quiet
        self._clock = clock
        self._since: float | None = None
        self._reminded = 0.0

    @property
    def paused(self) -> bool:
        """Whether the task's last try failed for an outage."""
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        """The task's try failed with ``exc``: the outage's first line (or a reminder), or
        ``exc`` with its traceback when it is not an outage."""
        if not isinstance(exc, self._quiet):
            log.error(f"{self._task}_failed", exc_info=exc)
            return
        now = self._clock()
        if self._since is None:
            self._since = self._reminded = now
            log.warning(f"{self._task}_paused", error=str(exc))
        elif now - self._reminded >= REMIND_S:
            self._reminded = now
            log.warning(f"{self._task}_paused", error=str(exc), down_s=round(now - self._since))

    def succeeded(self) -> None:
        """The task's try went through: the outage it was in, if any, is over."""
        if self._since is not None:
            down_s = self._clock() - self._since
            self._since = None
            log.info(f"{self._task}_resumed", down_s=round(down_s, 1))


async def repeat(
    task: str,
    step: Callable[[], Awaitable[object]],
    every_s: Callable[[], float],
    *,
    wait_first: bool = True,
) -> None:
    """Run ``step`` every ``every_s()`` seconds (read again each time: a reload may change
    it) until cancelled, waiting before each try (``wait_first``) or after it. A failed try
    is logged by an :class:`OutageLog` named ``task`` and tried again at the next one; a
    stop that a library turned into an error is a stop."""
    outage = OutageLog(task)
    while True:
        if wait_first:
            await asyncio.sleep(every_s())
        try:
            await step()
        except Exception as exc:
            if cancel_requested():
                raise asyncio.CancelledError from exc
            # Boundary: a failed try is tried again at the next one (an outage is one line
            # until it is over, anything else a traceback).
            outage.failed(exc)
        else:
            outage.succeeded()
        if not wait_first:
            await asyncio.sleep(every_s())
