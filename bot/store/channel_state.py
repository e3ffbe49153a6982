"""Small per-channel key/value state that must survive restarts (a polling offset, the index
of posted approval cards). Each row remembers when it was last written, so rows that only
matter for a while can be pruned by key prefix and age."""

from __future__ import annotations

import time
from collections.abc import Callable

from bot.store.sqlite import Database


class ChannelState:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock

    async def get(self, channel: str, key: str) -> str | None:
        row = await self._db.fetchone(
            "SELECT value FROM channel_state WHERE channel = ? AND key = ?", (channel, key)
        )
        return str(row["value"]) if row else None

    async def set(self, channel: str, key: str, value: str) -> None:
        await self._db.execute(
            "INSERT INTO channel_state (channel, key, value, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            (channel, key, value, self._clock()),
        )

    async def delete(self, channel: str, key: str) -> None:
        await self._db.execute(
            "DELETE FROM channel_state WHERE channel = ? AND key = ?", (channel, key)
        )

    async def prune(self, prefix: str, *, older_than_s: float) -> int:
        """Delete the rows of every channel whose key starts with ``prefix`` and that were
        last written more than ``older_than_s`` ago; the number deleted."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        deleted = await self._db.execute_returning_all(
            "DELETE FROM channel_state WHERE key LIKE ? ESCAPE '\\' AND updated_at < ? "
            "RETURNING key",
            (pattern, self._clock() - older_than_s),
        )
        return len(deleted)
