"""The stop's last resort: a process still alive past its stop budget is ended.

A stop is bounded step by step (the drain by ``--drain-timeout`` and
:data:`bot.gateway.drain.CANCEL_GRACE_S`, the parts' close by
:data:`bot.wiring.parts.CLOSE_TIMEOUT_S`, each MCP server's shutdown by its transport's kill
escalation), but a step can still wait on something that never ends: a library that swallows
cancellation, a worker thread stuck in a call, a task left behind that ``asyncio.run`` waits for
when it closes the loop. :class:`StopDeadline` is armed when the stop begins; if the process has
not exited when it expires, it logs ``stop_deadline_exceeded`` and ends the process with
:data:`EXIT_STOP_FORCED`. It runs on a daemon thread, so a blocked event loop cannot hold it up,
and it never delays a process that exits in time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import structlog

from bot.gateway.drain import CANCEL_GRACE_S
from bot.wiring.parts import CLOSE_TIMEOUT_S

log = structlog.get_logger(__name__)

#: What the stop may take beyond ``--drain-timeout``: the cancelled turns' grace, the parts'
#: close, and 10 s for the provider, the store, the HTTP server's own 2 s for open requests
#: and the event loop's teardown (30 s in all).
CLOSE_BUDGET_S = CANCEL_GRACE_S + CLOSE_TIMEOUT_S + 10.0
#: The exit status of a stop that had to be forced (a clean stop exits 0).
EXIT_STOP_FORCED = 1


class StopDeadline:
    """Ends the process ``budget_s`` after :meth:`arm`, unless it exited before."""

    def __init__(self, budget_s: float, *, exit: Callable[[int], object] = os._exit) -> None:
        self.budget_s = budget_s
        self._exit = exit
        self._timer: threading.Timer | None = None

    def arm(self) -> None:
        """Start counting (once; later calls do nothing)."""
        if self._timer is not None:
            return
        self._timer = threading.Timer(self.budget_s, self._expire)
        self._timer.name = "hatchway-stop-deadline"
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        log.error("stop_deadline_exceeded", budget_s=self.budget_s, exit_status=EXIT_STOP_FORCED)
        self._exit(EXIT_STOP_FORCED)
