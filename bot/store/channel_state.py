"""Small per-channel key/value state that must survive restarts (a polling offset, the index
of posted approval cards). Each row remembers when it was last written, so rows that only
matter for a while can be pruned by key prefix and age."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from bot.store.engine import Database
from bot.store.statements import Write, prefix_params, starts_with

_UPSERT = (
    "INSERT INTO channel_state (channel, key, value, updated_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (channel, key) DO UPDATE SET value = excluded.value, "
    "updated_at = excluded.updated_at"
)
_DELETE = "DELETE FROM channel_state WHERE channel = ? AND key = ?"


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
        await self._db.execute(_UPSERT, (channel, key, value, self._clock()))

    async def claim(self, channel: str, key: str, value: str) -> bool:
        """Write ``key`` only where the channel has no such row yet; whether it was written
        (one statement: of several processes claiming one key at once, one wins)."""
        written = await self._db.execute_returning_all(
            "INSERT INTO channel_state (channel, key, value, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (channel, key) DO NOTHING RETURNING key",
            (channel, key, value, self._clock()),
        )
        return bool(written)

    async def write(
        self, channel: str, *, put: Mapping[str, str], delete: Sequence[str] = ()
    ) -> None:
        """Set the rows of ``put`` and delete those named in ``delete``, in one transaction."""
        now = self._clock()
        writes = [Write(_DELETE, [(channel, key) for key in delete])] if delete else []
        if put:
            writes.append(Write(_UPSERT, [(channel, k, v, now) for k, v in put.items()]))
        if writes:
            await self._db.commit(writes)

    async def items(self, channel: str, prefix: str) -> list[tuple[str, str]]:
        """The channel's rows whose key starts with ``prefix`` (exactly: case and every
        character count) as (key, value), oldest written first."""
        rows = await self._db.fetchall(
            "SELECT key, value, updated_at FROM channel_state WHERE channel = ?"
            f" AND {starts_with('key')}",
            (channel, *prefix_params(prefix)),
        )
        # sorted here: keys written at the same moment in code point order on every engine
        # and collation (ORDER BY a text column follows the database's collation)
        rows = sorted(rows, key=lambda r: (float(r["updated_at"]), str(r["key"])))
        return [(str(r["key"]), str(r["value"])) for r in rows]

    async def delete(self, channel: str, key: str) -> None:
        await self._db.execute(_DELETE, (channel, key))

    async def prune(self, prefix: str, *, older_than_s: float) -> int:
        """Delete the rows of every channel whose key starts with ``prefix`` and that were
        last written more than ``older_than_s`` ago; the number deleted."""
        deleted = await self._db.execute_returning_all(
            f"DELETE FROM channel_state WHERE {starts_with('key')} AND updated_at < ?"
            " RETURNING key",
            (*prefix_params(prefix), self._clock() - older_than_s),
        )
        return len(deleted)
