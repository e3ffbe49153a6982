"""Every row of a SQLite database, table by table, for ``hatchway db migrate-to``
(:mod:`bot.store.transfer`).

The rows are read inside one write transaction (``BEGIN IMMEDIATE``), so they are one
consistent picture of the file and nothing can write to it meanwhile (a daemon still running
on it would find it busy: it should be stopped first). FTS5's own tables (``memory_fts`` and
its shadow tables) are left out: they are an index, which PostgreSQL keeps its own way.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass

from bot.store.sqlite.database import Database

BATCH = 2000
"""Rows read at a time (each a trip to the worker thread)."""

_SKIPPED = ("sqlite_", "memory_fts")


@dataclass(frozen=True, slots=True)
class TableRows:
    """A batch of one table's rows, in the order of ``columns``."""

    table: str
    columns: tuple[str, ...]
    rows: list[tuple[object, ...]]


async def export_rows(db: Database, *, batch: int = BATCH) -> AsyncGenerator[TableRows, None]:
    """Each table's rows, in batches of at most ``batch`` (a table without rows yields one
    empty batch, so every table is named), tables by name, rows in the order they were
    written (``rowid``)."""
    async with db.transaction() as tx:
        names = [
            str(r["name"])
            for r in await tx.fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            if not str(r["name"]).startswith(_SKIPPED)
        ]
        for table in names:
            info = await tx.fetchall(f'PRAGMA table_info("{table}")')
            columns = tuple(str(r["name"]) for r in info)
            listed = ", ".join(f'"{c}"' for c in columns)
            after = None
            while True:
                rows = await tx.fetchall(
                    f'SELECT rowid AS "__rowid", {listed} FROM "{table}"'
                    " WHERE ? IS NULL OR rowid > ? ORDER BY rowid LIMIT ?",
                    (after, after, batch),
                )
                if rows or after is None:
                    width = range(1, len(columns) + 1)
                    yield TableRows(table, columns, [tuple(r[i] for i in width) for r in rows])
                if len(rows) < batch:
                    break
                after = rows[-1]["__rowid"]
