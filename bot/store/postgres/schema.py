"""The schema on PostgreSQL: the numbered migrations in ``migrations/`` (the same numbers as
SQLite's, in PostgreSQL's words), applied in order, while holding an advisory lock.

Several replicas may start at once against one database: each takes
:data:`MIGRATION_LOCK` (``pg_advisory_lock``, waiting as long as it takes) before reading
which migrations are applied, so one applies them and the others, once they get the lock,
find nothing left to do. Each migration runs in a transaction of its own with its row in
``schema_migrations`` (number, file name, when), whose highest number is the schema version
(SQLite's ``user_version``). A replica of an older release does not start on a schema a newer
one migrated (its statements would miss the new columns' rules).
"""

from __future__ import annotations

import time
from importlib import resources

import asyncpg
import structlog

from bot import __version__
from bot.errors import SchemaTooNew

log = structlog.get_logger(__name__)

MIGRATION_LOCK = int.from_bytes(b"hatchmig", "big")
"""The advisory lock key held while migrating (``pg_advisory_lock``; session level)."""

MIGRATION_LOCK_TIMEOUT = "60s"
"""How long a migration's statement waits for a table another replica is using."""

_LEDGER = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " number INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
)


def migrations() -> list[tuple[int, str, str]]:
    """Every migration as ``(number, file name, SQL)``, lowest number first."""
    folder = resources.files("bot.store.postgres") / "migrations"
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


async def schema_version(conn: asyncpg.Connection) -> int:
    """The number of the last migration applied; 0 for a database without any."""
    if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NULL"):
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(number), 0) FROM schema_migrations"))


def _refuse_newer(current: int, latest: int) -> None:
    if current > latest:
        raise SchemaTooNew(
            f"the database has schema {current}, newer than this version of hatchway "
            f"({__version__}) knows ({latest}): a newer release migrated it; run that release "
            "on every replica, or restore the pg_dump taken before it (docs/operations.md, "
            "Roll back)"
        )


async def migrate(conn: asyncpg.Connection) -> int:
    """Apply every pending migration under :data:`MIGRATION_LOCK`; returns the version. A
    database with nothing pending is only read (no lock, no write). A schema newer than
    this version's last migration is refused (SchemaTooNew): a replica of an older release
    would write rows the newer tables do not expect."""
    known = migrations()
    latest = known[-1][0] if known else 0
    current = await schema_version(conn)
    _refuse_newer(current, latest)
    if current >= latest:
        return current
    await conn.execute("SET lock_timeout = 0")
    await conn.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})")
    try:
        await conn.execute(f"SET lock_timeout = '{MIGRATION_LOCK_TIMEOUT}'")
        await conn.execute(_LEDGER)
        current = await schema_version(conn)
        _refuse_newer(current, latest)  # a newer replica migrated while this one waited
        for number, name, sql in known:
            if number <= current:
                continue
            log.info("db_migration_applying", migration=name)
            async with conn.transaction():
                await conn.execute(sql)
                await conn.execute(
                    "INSERT INTO schema_migrations (number, name, applied_at) VALUES ($1, $2, $3)",
                    number,
                    name,
                    time.time(),
                )
            current = number
        return current
    finally:
        if not conn.is_closed():
            await conn.execute(f"SELECT pg_advisory_unlock({MIGRATION_LOCK}); RESET lock_timeout")
