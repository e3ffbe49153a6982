"""Dispatch: running prepared calls sequentially or in parallel, and cancelling them.

A batch runs in parallel only when all of these hold (:func:`runs_in_parallel`): parallel
tools are enabled, more than one call is runnable, no call of the batch needed a prompt, and
no call of the batch is ``tool_search`` (it changes which tools are on offer).

Sequential dispatch checks the cancel token before each call and launches nothing more once
it is set. Parallel dispatch starts every call in the model's order; when the token is set,
calls that already finished keep their real result and only unfinished ones become
INTERRUPTED. Each call's task is owned by one TaskGroup; every slot is filled once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Sequence

from bot.tools.call import PreparedCall
from bot.tools.cancellation import CancelSignal
from bot.tools.outcome import ToolOutcome, interrupted
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
    """Fill the slots of ``calls``. ``CancelledError`` raised by a handler itself (not by
    the cancel token) propagates."""
    if not calls:
        return
    live: dict[int, asyncio.Task[ToolOutcome]] = {}
    stopped: set[int] = set()

    def settle(index: int, task: asyncio.Task[ToolOutcome]) -> None:
        # fill the slot the moment a call finishes, so that a batch interrupted from
        # outside (the turn budget) still keeps every real result
        if not task.cancelled() and task.exception() is None:
            slots.fill(index, task.result())

    def launch(group: asyncio.TaskGroup, call: PreparedCall) -> asyncio.Task[ToolOutcome]:
        index = call.call.index
        task = live[index] = group.create_task(run_one(call))
        task.add_done_callback(lambda done: settle(index, done))
        return task

    async def watch() -> None:
        await cancel.wait()
        for index, task in live.items():
            if not task.done():
                stopped.add(index)
                task.cancel()

    async with asyncio.TaskGroup() as group:
        watcher = group.create_task(watch())
        try:
            if parallel and not cancel.cancelled:
                for call in calls:
                    launch(group, call)
                await asyncio.wait(live.values())
            elif not parallel:
                for call in calls:
                    if cancel.cancelled:
                        break
                    await asyncio.wait((launch(group, call),))
        finally:
            watcher.cancel()

    for call in calls:
        index = call.call.index
        if slots.get(index) is not None:
            continue
        done = live.get(index)
        if done is not None and not (done.cancelled() and index in stopped):
            raise asyncio.CancelledError  # cancelled by the handler itself, not the token
        before_launch = not slots.launched(index)
        slots.fill(
            index, interrupted(call_id=call.call_id, tool=call.name, before_launch=before_launch)
        )
