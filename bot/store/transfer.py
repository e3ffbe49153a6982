"""Moving a SQLite database into PostgreSQL (``hatchway db migrate-to URL``).

Both sides are brought to the same schema (each applies its own migrations, numbered alike),
then every row of the SQLite file is read in one transaction of its own
(:mod:`bot.store.sqlite.export`) and written into the empty PostgreSQL database in one
transaction (:mod:`bot.store.postgres.load`): all of it or, on any failure, nothing. The
file itself is left as it was (migrated, if it was behind), to keep as a backup.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from bot.errors import StorageError
from bot.store.postgres import Database as PostgresDatabase
from bot.store.postgres.load import load_rows
from bot.store.sqlite import Database as SqliteDatabase
from bot.store.sqlite.export import export_rows


@dataclass(frozen=True, slots=True)
class Transfer:
    """What one move copied: the schema both were at, and the rows copied per table."""

    schema: int
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


async def copy_sqlite_to_postgres(source: SqliteDatabase, target: PostgresDatabase) -> Transfer:
    """Copy every row of ``source`` into ``target``, which must be empty; both already
    migrated (:meth:`Database.open <bot.store.postgres.Database.open>`)."""
    schema = await source.schema_version()
    theirs = await target.schema_version()
    if schema != theirs:
        raise StorageError(
            f"database {source.description} is at schema {schema} and "
            f"{target.description} at {theirs}: both must be migrated by the same version"
        )
    # closed however the load ends, so the file's transaction (and the engine's lock) ends too
    async with contextlib.aclosing(export_rows(source)) as rows:
        return Transfer(schema=schema, rows=await load_rows(target, rows))
