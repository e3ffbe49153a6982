"""The cancel signal the pipeline and the loop watch, and racing work against it.

``bot.agent.turn.CancelToken`` implements :class:`CancelSignal`.

:func:`unless_cancelled` runs the work in the calling task, not in a task of its own next to
a watcher task: a provider call, an approval wait or a tool call then costs no task and no
extra event-loop steps. When the signal fires it cancels the calling task and takes that
cancellation back (``Task.uncancel``), as ``asyncio.timeout`` does, so the two nest
correctly (the turn's budget is a timeout around it) and a cancellation from anywhere else
still propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Protocol, TypeVar

from bot.turn import CancelReason

T = TypeVar("T")


class CancelSignal(Protocol):
    """Set once by ``/stop`` or shutdown; never reset."""

    @property
    def cancelled(self) -> bool: ...

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` once when the signal is set (at once if it already is);
        returns the function that unregisters it."""
        ...

    def cancel(self, reason: CancelReason) -> None:
        """Set the signal from inside the turn (the pipeline ends a turn whose approval
        expired because the daemon is stopping)."""
        ...


async def unless_cancelled(coro: Coroutine[object, object, T], cancel: CancelSignal) -> T | None:
    """Await ``coro`` unless ``cancel`` fires first; then ``coro`` is cancelled (it sees
    ``CancelledError`` where it next waits) and the result is ``None`` (or what ``coro``
    returns if it finishes anyway). Exceptions of ``coro`` propagate unchanged, and so does a
    cancellation of the caller."""
    if cancel.cancelled:
        coro.close()
        return None
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("unless_cancelled needs a running task")
    loop = asyncio.get_running_loop()
    inside, fired = True, False

    def interrupt() -> None:
        nonlocal fired
        if inside and not fired:
            fired = True
            task.cancel()

    baseline = task.cancelling()
    # The signal may be set from inside this very task (a tool stopping its own turn):
    # cancelling a running task would cancel whatever it awaits next, even after ``coro``
    # has returned, so the task is cancelled one loop step later, where it waits.
    unregister = cancel.on_cancel(lambda: loop.call_soon(interrupt))
    try:
        result = await coro
    except asyncio.CancelledError:
        if fired and task.uncancel() <= baseline:
            return None
        raise
    except BaseException:
        if fired:  # coro turned the cancellation into an error: it propagates, ours does not
            task.uncancel()
        raise
    finally:
        inside = False
        unregister()
    if fired:  # coro swallowed the cancellation and finished: its result stands
        task.uncancel()
    return result
