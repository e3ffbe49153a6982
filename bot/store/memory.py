"""Memory notes: short texts the bot keeps, each in one scope, found by a ranked search.

Notes live in ``memory`` and belong to one ``scope_key``; every read filters by scope, so one
channel or conversation never sees another's notes. The search itself is the engine's own
statement (``db.memory_search``: FTS5 ranked by bm25 on SQLite, a ``tsvector`` ranked by
``ts_rank`` on PostgreSQL), the one query of the store that is not portable.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.errors import StorageError
from bot.store.engine import Database
from bot.store.statements import Row, prefix_params, starts_with


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryNote:
    id: int
    scope_key: str
    content: str
    tags: str
    created_by: str
    created_at: float


def _note(r: Row) -> MemoryNote:
    return MemoryNote(
        id=int(r["id"]),
        scope_key=str(r["scope_key"]),
        content=str(r["content"]),
        tags=str(r["tags"]),
        created_by=str(r["created_by"]),
        created_at=float(r["created_at"]),
    )


def _notes(rows: list[Row]) -> list[MemoryNote]:
    return [_note(r) for r in rows]


class MemoryNotes:
    """The ``memory`` repository."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self, *, scope_key: str, content: str, tags: str = "", created_by: str = ""
    ) -> int:
        """Store a note; returns its id."""
        row = await self._db.execute_returning(
            "INSERT INTO memory (scope_key, content, tags, created_by, created_at)"
            " VALUES (?, ?, ?, ?, ?) RETURNING id",
            (scope_key, content, tags, created_by, time.time()),
        )
        if row is None:  # an INSERT … RETURNING always returns its row
            raise StorageError("the memory note was not stored")
        return int(row["id"])

    async def search(self, *, scope_key: str, query: str, limit: int = 5) -> list[MemoryNote]:
        """Notes of ``scope_key`` matching ``query``, best rank first (ties: newest)."""
        search = self._db.memory_search(scope_key=scope_key, text=query, limit=limit, decode=_notes)
        if search is None:
            return []
        return await self._db.read(search)

    async def recent(self, *, scope_key: str, limit: int = 5) -> list[MemoryNote]:
        """The newest notes of ``scope_key``."""
        rows = await self._db.fetchall(
            "SELECT * FROM memory WHERE scope_key = ? ORDER BY id DESC LIMIT ?",
            (scope_key, limit),
        )
        return [_note(r) for r in rows]

    async def delete(self, *, scope_key: str, note_id: int) -> bool:
        """Delete a note of ``scope_key``; False when there is no such note in that scope."""
        deleted = await self._db.execute_returning(
            "DELETE FROM memory WHERE id = ? AND scope_key = ? RETURNING id", (note_id, scope_key)
        )
        return deleted is not None

    async def count_outside(self, prefix: str) -> int:
        """How many notes have a ``scope_key`` that does not start with ``prefix`` (the notes
        a change of ``tools.memory.scope`` left out of reach). ``prefix`` is plain text:
        ``%``, ``_`` and ``\\`` in it match only themselves, and case counts."""
        row = await self._db.fetchone(
            f"SELECT COUNT(*) AS n FROM memory WHERE NOT {starts_with('scope_key')}",
            prefix_params(prefix),
        )
        return 0 if row is None else int(row["n"])
