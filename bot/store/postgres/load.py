"""Rows loaded into an empty PostgreSQL database in one transaction, for ``hatchway db
migrate-to`` (:mod:`bot.store.transfer`).

Every table is locked against writers first and must be empty: the command copies into a
new database, never merges into one in use. Rows go in with ``COPY`` (asyncpg's
``copy_records_to_table``: one stream per batch, not a statement per row), ids included, and
each identity column's sequence is then set past the highest id copied, so the next row the
daemon writes gets a new one. Anything failing rolls all of it back: the database is left
migrated and empty.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Sequence
from typing import TYPE_CHECKING, Protocol

import asyncpg

from bot.errors import StorageError
from bot.store.postgres.errors import mapped

if TYPE_CHECKING:
    from bot.store.postgres.database import Database


class Batch(Protocol):
    """Some rows of one table, in the order of ``columns``."""

    @property
    def table(self) -> str: ...

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def rows(self) -> Sequence[tuple[object, ...]]: ...


async def load_rows(db: Database, batches: AsyncIterable[Batch]) -> dict[str, int]:
    """Copy ``batches`` into ``db``'s tables of the same names, all in one transaction;
    returns the rows copied per table. StorageError, with nothing written, when a table has
    rows already, a table is missing, or a row does not fit."""
    conn = await db._acquire()
    try:
        async with mapped(f"cannot copy into database {db.description}"), conn.transaction():
            # batches are read from the source between statements, for as long as it takes
            await conn.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
            tables = await _lock_empty_tables(conn, db.description)
            counts: dict[str, int] = {}
            async for batch in batches:
                if batch.table not in tables:
                    raise StorageError(
                        f"database {db.description} has no table {batch.table}: is it "
                        "migrated by the same version of hatchway?"
                    )
                counts.setdefault(batch.table, 0)
                if batch.rows:
                    try:
                        await conn.copy_records_to_table(
                            batch.table, records=batch.rows, columns=list(batch.columns)
                        )
                    except (TypeError, ValueError, OverflowError) as exc:  # the driver's encoding
                        raise StorageError(
                            f"cannot copy into database {db.description}: a row of "
                            f"{batch.table} does not fit its column types ({exc})"
                        ) from exc
                    counts[batch.table] += len(batch.rows)
            await _reset_sequences(conn)
    finally:
        await db._release(conn)
    return counts


async def _lock_empty_tables(conn: asyncpg.Connection, where: str) -> set[str]:
    names = [
        str(r["tablename"])
        for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename <> 'schema_migrations' ORDER BY tablename"
        )
    ]
    for name in names:
        await conn.execute(f'LOCK TABLE "{name}" IN EXCLUSIVE MODE NOWAIT')
        if await conn.fetchval(f'SELECT EXISTS (SELECT 1 FROM "{name}")'):
            raise StorageError(
                f"database {where} is not empty (table {name} has rows): migrate-to copies "
                "into a new, empty database only"
            )
    return set(names)


async def _reset_sequences(conn: asyncpg.Connection) -> None:
    identities = await conn.fetch(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND is_identity = 'YES'"
    )
    for row in identities:
        table, column = row["table_name"], row["column_name"]
        await conn.execute(
            f"SELECT setval(pg_get_serial_sequence('\"{table}\"', '{column}'),"
            f' COALESCE(MAX("{column}"), 0) + 1, false) FROM "{table}"'
        )
