"""Waiting for what replicas do on their own (a lease taken, a poll begun): conditions with
generous timeouts, never a timing assertion."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

#: Generous: the machine may be loaded; a lease of the tests' settings passes in about 1 s.
WAIT_S = 30.0


async def eventually(check: Callable[[], bool], wait_s: float = WAIT_S) -> None:
    """Return once ``check()`` holds; TimeoutError after ``wait_s``."""
    async with asyncio.timeout(wait_s):
        # the states waited on (health, a lease, a poll) come with no notification
        while not check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def eventually_async(check: Callable[[], Awaitable[bool]], wait_s: float = WAIT_S) -> None:
    """:func:`eventually` for a check that reads the store."""
    async with asyncio.timeout(wait_s):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)
