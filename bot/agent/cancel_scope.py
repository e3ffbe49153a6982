"""Racing one coroutine against the turn's cancel token in the calling task.

:func:`bot.tools.cancellation.until_cancelled` runs the work and a watcher of the token as two
tasks and waits for the first: about 0.1 ms of event-loop CPU per call, which the agent loop
would pay for every provider call. :func:`unless_cancelled` has the same contract for a
:class:`~bot.agent.turn.CancelToken` but runs the work in the calling task: when the token
fires it cancels that task and takes the cancellation back (``Task.uncancel``), as
``asyncio.timeout`` does, so the two nest correctly (the turn's budget is a timeout around
it) and a cancellation from anywhere else still propagates.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TypeVar

from bot.agent.turn import CancelToken

T = TypeVar("T")


async def unless_cancelled(coro: Coroutine[object, object, T], token: CancelToken) -> T | None:
    """Await ``coro`` unless ``token`` fires first; then ``coro`` is cancelled (it sees
    ``CancelledError`` where it waits) and the result is ``None`` (or what ``coro`` returns
    if it finishes anyway). Exceptions of ``coro`` propagate unchanged, and so does a
    cancellation of the caller."""
    if token.cancelled:
        coro.close()
        return None
    task = asyncio.current_task()
    if task is None:
        raise RuntimeError("unless_cancelled needs a running task")
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    baseline = task.cancelling()
    unregister = token.on_cancel(fire)
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
        unregister()
    if fired:  # coro swallowed the cancellation and finished: its result stands
        task.uncancel()
    return result
