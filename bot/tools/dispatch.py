"""Dispatch: running prepared calls sequentially or in parallel, and cancelling them.

A batch runs in parallel only when all of these hold (:func:`runs_in_parallel`): parallel
tools are enabled, more than one call is runnable, no call of the batch needed a prompt, and
no call of the batch is ``tool_search`` (it changes which tools are on offer).

Sequential dispatch runs each call in the turn's own task (no task per call: most batches
are one call), checks the cancel token before each call and launches nothing more once it is
set. Parallel dispatch starts every call in the model's order, each in a task owned by one
TaskGroup; when the token is set, calls that already finished keep their real result and
only unfinished ones are cancelled. Either way a call's slot is filled the moment it
finishes; the slots of interrupted calls stay open for the pipeline to fill as INTERRUPTED.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Iterable, Sequence

from bot.tools.call import PreparedCall
from bot.tools.cancellation import CancelSignal, unless_cancelled
from bot.tools.outcome import ToolOutcome
from bot.tools.slots import ResultSlots

RunOne = Callable[[PreparedCall], Coroutine[object, object, ToolOutcome]]

SEQUENTIAL_TOOLS = frozenset({"tool_search"})


def runs_in_parallel(
    calls: Sequence[PreparedCall], batch_tools: Iterable[str], *, enabled: bool, asked: bool
) -> bool:
    """Whether ``calls`` may run in parallel. ``batch_tools`` names every call of the batch,
    runnable or not; ``asked`` says a call of the batch needed a prompt."""
    return (
        enabled
        and len(calls) > 1
        and not asked
        and not any(name in SEQUENTIAL_TOOLS for name in batch_tools)
    )


async def dispatch(
    calls: Sequence[PreparedCall],
    run_one: RunOne,
    slots: ResultSlots,
    cancel: CancelSignal,
    *,
    parallel: bool,
) -> None:
    """Fill the slots of the calls that finish. ``CancelledError`` raised by a handler
    itself (not by the cancel token) propagates."""
    if parallel:
        await _in_parallel(calls, run_one, slots, cancel)
        return
    for call in calls:
        outcome = await unless_cancelled(run_one(call), cancel)
        if outcome is None:
            return
        slots.fill(call.call.index, outcome)


async def _in_parallel(
    calls: Sequence[PreparedCall], run_one: RunOne, slots: ResultSlots, cancel: CancelSignal
) -> None:
    if cancel.cancelled:
        return
    tasks: dict[int, asyncio.Task[ToolOutcome]] = {}
    stopped: set[int] = set()

    def stop() -> None:
        for index, task in tasks.items():
            if not task.done():
                stopped.add(index)
                task.cancel()

    loop = asyncio.get_running_loop()
    # one loop step later: a handler that sets the token finishes with its real result
    unregister = cancel.on_cancel(lambda: loop.call_soon(stop))
    try:
        async with asyncio.TaskGroup() as group:
            for call in calls:
                index = call.call.index
                task = tasks[index] = group.create_task(run_one(call))
                # fill the slot the moment the call finishes, so that a batch interrupted
                # from outside (the turn budget) still keeps every real result
                task.add_done_callback(functools.partial(_settle, slots, index))
    finally:
        unregister()
    if any(task.cancelled() and index not in stopped for index, task in tasks.items()):
        raise asyncio.CancelledError  # cancelled by the handler itself, not the token


def _settle(slots: ResultSlots, index: int, task: asyncio.Task[ToolOutcome]) -> None:
    if not task.cancelled() and task.exception() is None:
        slots.fill(index, task.result())
