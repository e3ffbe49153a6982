"""Stopping the daemon's long-running parts (channels, MCP servers, scheduler, gateway...).

A part is cancelled and waited for, but not forever: a library that caught the cancellation
and went on (a reconnect loop of its own) is cancelled again, and a part still running at the
end is named in the log and left behind, since the daemon's stop deadline
(:mod:`bot.ops.stop_deadline`) ends the process anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping

import structlog

log = structlog.get_logger(__name__)

#: How long the long-running parts (channels, MCP servers, scheduler, gateway) get to stop
#: once cancelled, after the drain. MCP servers need the most: up to ~6.5 s for one that
#: ignores its closed stdin and SIGTERM (see bot.mcp.connection.STOP_GRACE_S).
CLOSE_TIMEOUT_S = 10.0
#: A part still running this long after its cancellation is cancelled again: a library that
#: caught the cancellation and went on (a reconnect loop of its own) gets another one.
CANCEL_AGAIN_S = 2.0


async def stop_parts(runner: asyncio.Task[None], parts: Mapping[str, asyncio.Task[None]]) -> None:
    """Cancel ``runner`` (the task group of ``parts``, by name) and wait for it, at most
    CLOSE_TIMEOUT_S; a part still running is cancelled again every CANCEL_AGAIN_S, and one
    left at the end is named in ``app_stop_incomplete`` (the daemon's stop deadline ends the
    process)."""
    runner.cancel()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CLOSE_TIMEOUT_S
    while not runner.done() and (left := deadline - loop.time()) > 0:
        await asyncio.wait({runner}, timeout=min(CANCEL_AGAIN_S, left))
        for task in parts.values():
            if not task.done() and loop.time() < deadline:
                task.cancel()
    if not runner.done():
        running = sorted(name for name, task in parts.items() if not task.done())
        log.error("app_stop_incomplete", running=running, waited_s=CLOSE_TIMEOUT_S)
        return
    with contextlib.suppress(asyncio.CancelledError):
        runner.result()
