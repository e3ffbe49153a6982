"""The SQLite connection: how it is opened and set up (WAL, foreign keys, busy timeout,
incremental vacuum for a new file).

Both run on the worker thread (:class:`~bot.store.sqlite.worker.SqliteWorker`), the only
thread that ever uses the connection: :func:`connect` opens it, then :class:`Prepare` sets
its pragmas and reads the schema version the file is at, before any migration runs
(:mod:`bot.store.sqlite.schema`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bot.store.sqlite.errors import mapped


def connect(path: Path, *, create: bool = True) -> sqlite3.Connection:
    """Open ``path`` in autocommit mode (transactions are the engine's own ``BEGIN``), with
    rows read by column name. ``create=False``: a missing file is an error, never made (read
    and write all the same: a WAL file without its ``-shm`` cannot be opened read-only)."""
    if create:
        connection = sqlite3.connect(str(path), isolation_level=None)
    else:
        uri = f"{path.absolute().as_uri()}?mode=rw"
        connection = sqlite3.connect(uri, isolation_level=None, uri=True)
    connection.row_factory = sqlite3.Row
    return connection


@dataclass(frozen=True, slots=True)
class Prepare:
    """Set the connection up; returns the schema version the file is at."""

    path: Path

    def __call__(self, conn: sqlite3.Connection) -> int:
        with mapped(f"cannot prepare database {self.path}", path=self.path):
            if int(conn.execute("PRAGMA page_count").fetchone()[0]) == 0:
                # a new file: freed pages can be given back without rewriting it (only
                # settable before the first table, and before WAL writes the header)
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            row = conn.execute("PRAGMA user_version").fetchone()
        return int(row[0]) if row else 0
