"""Finishing what a stop must not cut off: the socket's close and the hand-over after it.

A stop cancels the channel's task, and cancels it again every couple of seconds
(:data:`bot.wiring.parts.CANCEL_AGAIN_S`) until it ends. Two steps of the Slack channel's end
must run to their end all the same, or an event that reached this process is stranded until
some later start, and answered after newer messages of its conversation that reached other
replicas: closing the socket only once what it received went through the listeners
(:mod:`channels.slack.socket`), and handing the received events to the inbox once nothing more
comes in (:meth:`channels.slack.inbound.SlackInbound.hand_over_rest`).
:func:`finish_while_stopping` runs such a step in a task of its own that the repeated
cancellations do not reach, bounded in time so that the stop still ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

log = structlog.get_logger(__name__)


async def finish_while_stopping(
    work: Coroutine[Any, Any, None], *, limit_s: float, what: str
) -> None:
    """Run ``work`` to its end, even while the calling task is cancelled, for at most
    ``limit_s`` (then it is cancelled and ``slack_stop_step_cut_short`` names ``what``).
    A cancellation that arrived meanwhile is raised once ``work`` is over."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    cancelled = False
    while not task.done() and (left := deadline - loop.time()) > 0:
        try:
            await asyncio.wait({task}, timeout=left)
        except asyncio.CancelledError:
            cancelled = True
    if not task.done():
        task.cancel()
        task.add_done_callback(_retrieve)
        log.warning("slack_stop_step_cut_short", step=what, limit_s=limit_s)
    elif not task.cancelled() and (error := task.exception()) is not None:
        log.warning("slack_stop_step_failed", step=what, error=repr(error))
    if cancelled:
        raise asyncio.CancelledError


def _retrieve(task: asyncio.Future[None]) -> None:
    """Consume the outcome of a step cut short, so that asyncio does not log it as lost."""
    if not task.cancelled():
        task.exception()
