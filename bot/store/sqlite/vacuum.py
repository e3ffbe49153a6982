"""Giving freed pages back to the file system: SQLite's incremental vacuum.

A deleted row leaves its pages free inside the file; with ``auto_vacuum = INCREMENTAL`` the
file keeps a map of them and ``PRAGMA incremental_vacuum`` moves them to the end and cuts
the file short, a little at a time and without rewriting it. A new database is created in
that mode (:class:`~bot.store.sqlite.connection.Prepare`). An older one is switched once,
by :class:`Compact` itself: the mode takes effect only through a full ``VACUUM``, which
rewrites the whole file (it needs as much free disk as the file takes, and every other
statement of the daemon waits for it), so the retention job does it, once, and logs it.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from bot.store.engine import Compaction
from bot.store.sqlite.errors import mapped

#: ``PRAGMA auto_vacuum`` of a file in incremental mode.
INCREMENTAL = 2


@dataclass(frozen=True, slots=True)
class Compact:
    """A job for the worker thread: switch the file to incremental mode if it is not (one
    ``VACUUM``), then free every unused page."""

    path: Path

    def __call__(self, conn: sqlite3.Connection) -> Compaction:
        with mapped(f"cannot compact database {self.path}", path=self.path):
            switched, vacuum_s = False, 0.0
            if int(conn.execute("PRAGMA auto_vacuum").fetchone()[0]) != INCREMENTAL:
                started = time.monotonic()
                conn.execute(f"PRAGMA auto_vacuum = {INCREMENTAL}")
                conn.execute("VACUUM")
                switched, vacuum_s = True, time.monotonic() - started
            free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            # run to the end: each step of the statement frees one page, and the module's
            # execute() steps it once
            conn.executescript("PRAGMA incremental_vacuum;")
            left = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
            pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        return Compaction(
            switched=switched, vacuum_s=vacuum_s, pages_freed=free - left, file_pages=pages
        )
