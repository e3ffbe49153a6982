"""The schema: numbered migrations in ``migrations/``, applied in order when the file opens.

A migration is ``NNNN_name.sql``; the file's ``user_version`` is the number of the last one
applied, and :meth:`bot.store.sqlite.Database.open` applies those above it, each in a
transaction of its own (:class:`Migration`, a job for the worker thread). The SQL is
SQLite's (FTS5 tables, triggers); another engine keeps its own folder, numbered alike.

A file whose ``user_version`` is above this release's last migration was migrated by a newer
release: the daemon refuses it (:func:`refuse_newer`, PostgreSQL's rule and words), since it
would write rows the newer tables do not expect; ``hatchway doctor`` reads it and says so.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from bot import __version__
from bot.errors import SchemaTooNew
from bot.store.sqlite.errors import EngineError, mapped


def migrations() -> list[tuple[int, str, str]]:
    """Every migration as ``(number, file name, SQL)``, lowest number first."""
    folder = resources.files("bot.store.sqlite") / "migrations"
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def refuse_newer(path: Path, current: int, latest: int) -> None:
    """SchemaTooNew when the file's schema ``current`` is newer than ``latest``, the last
    migration this release knows."""
    if current > latest:
        raise SchemaTooNew(
            f"the database {path} has schema {current}, newer than this version of hatchway "
            f"({__version__}) knows ({latest}): a newer release migrated it; run that release, "
            "or put back the backup taken before it (docs/operations.md, Roll back)"
        )


@dataclass(frozen=True, slots=True)
class Migration:
    """Apply one numbered migration in its own transaction."""

    path: Path
    number: int
    sql: str

    def __call__(self, conn: sqlite3.Connection) -> None:
        with mapped(f"cannot prepare database {self.path}", path=self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in split_sql(self.sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version={self.number}")
                conn.execute("COMMIT")
            except BaseException:
                # A COMMIT that finds the disk full has already rolled back: a ROLLBACK
                # then fails ("no transaction is active") and would hide the cause.
                if conn.in_transaction:
                    with contextlib.suppress(*EngineError):
                        conn.execute("ROLLBACK")
                raise


def split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping ``CREATE TRIGGER … END;`` bodies whole."""
    statements: list[str] = []
    buffer: list[str] = []
    for line in script.splitlines():
        stripped = line.split("--", 1)[0].rstrip() if not line.lstrip().startswith("--") else ""
        if not stripped:
            continue
        buffer.append(stripped)
        candidate = "\n".join(buffer)
        if sqlite3.complete_statement(candidate):
            statements.append(candidate)
            buffer = []
    if buffer and "\n".join(buffer).strip():
        statements.append("\n".join(buffer))
    return statements
