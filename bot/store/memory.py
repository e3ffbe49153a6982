"""Memory notes: short texts the bot keeps, searched with FTS5 and ranked by bm25.

Notes live in ``memory`` (with the external-content FTS5 table ``memory_fts`` kept in step by
triggers, see ``0001_initial.sql``) and belong to one ``scope_key``; every read filters by
scope, so one channel or conversation never sees another's notes. User text never reaches the
MATCH expression as syntax: :func:`fts_query` turns it into quoted terms.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from bot.errors import StorageError
from bot.store.db import Database
from bot.store.statements import Row

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryNote:
    id: int
    scope_key: str
    content: str
    tags: str
    created_by: str
    created_at: float


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression for free ``text``: its word terms, each a quoted string (so
    operators, column filters and quotes in the text are inert), joined with OR so that notes
    matching more terms rank higher. Empty when the text has no word characters."""
    terms: list[str] = []
    for term in _TERM.findall(text.lower()):
        if term not in terms:
            terms.append(term)
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms[:MAX_QUERY_TERMS]]
    return " OR ".join(quoted)


def _note(r: Row) -> MemoryNote:
    return MemoryNote(
        id=int(r["id"]),
        scope_key=str(r["scope_key"]),
        content=str(r["content"]),
        tags=str(r["tags"]),
        created_by=str(r["created_by"]),
        created_at=float(r["created_at"]),
    )


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
        """Notes of ``scope_key`` matching ``query``, best bm25 rank first (ties: newest)."""
        expression = fts_query(query)
        if not expression:
            return []
        rows = await self._db.fetchall(
            "SELECT m.* FROM memory_fts JOIN memory AS m ON m.id = memory_fts.rowid"
            " WHERE memory_fts MATCH ? AND m.scope_key = ?"
            " ORDER BY bm25(memory_fts), m.id DESC LIMIT ?",
            (expression, scope_key, limit),
        )
        return [_note(r) for r in rows]

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
