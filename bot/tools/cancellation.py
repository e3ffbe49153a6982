"""The cancel signal the pipeline and the loop watch, and racing work against it.

``bot.agent.turn.CancelToken`` implements :class:`CancelSignal`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Protocol, TypeVar

T = TypeVar("T")


class CancelSignal(Protocol):
    """Set once by ``/stop`` or shutdown; never reset."""

    @property
    def cancelled(self) -> bool: ...

    async def wait(self) -> None: ...


async def until_cancelled(coro: Coroutine[object, object, T], cancel: CancelSignal) -> T | None:
    """Await ``coro`` unless ``cancel`` fires first; then ``coro`` is cancelled and the
    result is ``None``. Exceptions of ``coro`` propagate unchanged; both helper tasks are
    finished before this returns, also when the caller is cancelled."""
    if cancel.cancelled:
        coro.close()
        return None
    work = asyncio.ensure_future(coro)
    watcher = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait((work, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not work.done():
            work.cancel()
        await asyncio.wait((work, watcher))
    if work.cancelled():
        if cancel.cancelled:
            return None
        raise asyncio.CancelledError
    return work.result()
