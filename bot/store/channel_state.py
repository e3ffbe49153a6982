"""Small per-channel key/value state that must survive restarts (e.g. a polling offset)."""

from __future__ import annotations

from bot.store.db import Database


class ChannelState:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, channel: str, key: str) -> str | None:
        row = await self._db.fetchone(
            "SELECT value FROM channel_state WHERE channel = ? AND key = ?", (channel, key)
        )
        return str(row["value"]) if row else None

    async def set(self, channel: str, key: str, value: str) -> None:
        await self._db.execute(
            "INSERT INTO channel_state (channel, key, value) VALUES (?, ?, ?) "
            "ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value",
            (channel, key, value),
        )
