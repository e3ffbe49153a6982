"""What the group context tests wait for and read: the kept lines, from the database."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.store import Store
from bot.untrusted import CLOSE_TAG, OPEN_TAG


async def until(check: Callable[[], Awaitable[bool]], *, within_s: float = 60.0) -> None:
    """Wait for a condition the system reaches on its own; the bound is for a failure only."""
    async with asyncio.timeout(within_s):
        while not await check():  # noqa: ASYNC110 (a database row gives no other signal)
            await asyncio.sleep(0.01)


async def kept_texts(store: Store) -> list[str]:
    """The text of every kept line, oldest first."""
    rows = await store.db.fetchall("SELECT text FROM context_lines ORDER BY id")
    return [str(row["text"]) for row in rows]


def has_kept(store: Store, *texts: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return sorted(await kept_texts(store)) == sorted(texts)

    return check


def context_of(content: str) -> str:
    """The untrusted-data block at the start of a user message's text ("" when none)."""
    if not content.startswith(OPEN_TAG):
        return ""
    return content[: content.index(CLOSE_TAG) + len(CLOSE_TAG)]
