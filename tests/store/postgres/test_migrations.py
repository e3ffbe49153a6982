"""PostgreSQL's migrations: numbered as SQLite's, the same tables and columns in the same
order, and the data migrations (0007's one spelling per audit decision, 0011's sender of each
inbox entry) doing to old rows what SQLite's do."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from bot.envelope import envelope_to_json
from bot.store import Store
from bot.store.audit import Decision
from bot.store.postgres import migrations as pg_migrations
from bot.store.sqlite.schema import migrations as sqlite_migrations
from tests.store.records import envelope

SQLITE_ONLY = ("memory_fts",)  # FTS5's table and its shadow tables: an index on PostgreSQL


def test_both_engines_number_their_migrations_alike() -> None:
    assert [n for n, _, _ in pg_migrations()] == [n for n, _, _ in sqlite_migrations()]
    assert [name for _, name, _ in pg_migrations()] == [name for _, name, _ in sqlite_migrations()]


async def test_both_engines_have_the_same_tables_and_columns(tmp_path: Path, pg_url: str) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        tables = [
            str(r["name"])
            for r in await store.db.fetchall(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " ORDER BY name"
            )
            if not str(r["name"]).startswith(SQLITE_ONLY)
        ]
        sqlite = {
            t: [str(r["name"]) for r in await store.db.fetchall(f"PRAGMA table_info({t})")]
            for t in tables
        }
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name <> 'schema_migrations'"
            " ORDER BY table_name, ordinal_position"
        )
    finally:
        await conn.close()
    postgres: dict[str, list[str]] = {}
    for row in rows:
        postgres.setdefault(row["table_name"], []).append(row["column_name"])
    assert postgres == sqlite


async def database_at(url: str, version: int) -> asyncpg.Connection:
    """A connection to the database at ``url``, migrated up to ``version`` only (as an
    older hatchway left it)."""
    conn = await asyncpg.connect(url)
    await conn.execute(
        "CREATE TABLE schema_migrations (number INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at DOUBLE PRECISION NOT NULL)"
    )
    for number, name, sql in pg_migrations():
        if number <= version:
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations VALUES ($1, $2, 0)", number, name)
    return conn


async def test_old_audit_spellings_are_migrated_and_stay_append_only(pg_empty_url: str) -> None:
    conn = await database_at(pg_empty_url, 6)
    try:
        await conn.executemany(
            "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary,"
            " fingerprint, decision, decided_by)"
            " VALUES ($1, 'c', 'c', 'u', 't', '[]', 'f', $2, 'r')",
            [(1.0, "allow"), (2.0, "deny"), (3.0, "denied")],
        )
        async with await Store.open_postgres(pg_empty_url) as store:
            entries = await store.audit.since()
        assert [e.decision for e in entries] == [
            Decision.POLICY_ALLOWED,
            Decision.POLICY_DENIED,
            Decision.DENIED,
        ]
        for sql in ("UPDATE audit SET decision = 'allow'", "DELETE FROM audit"):
            try:
                await conn.execute(sql)
            except asyncpg.IntegrityConstraintViolationError as exc:
                assert "append-only" in str(exc)
            else:
                raise AssertionError(f"{sql} was allowed")
    finally:
        await conn.close()


async def test_the_sender_of_old_inbox_entries_is_filled_in(pg_empty_url: str) -> None:
    conn = await database_at(pg_empty_url, 10)
    env = envelope("1001", "-100", "7")
    try:
        await conn.executemany(
            "INSERT INTO inbox (channel, message_id, envelope_id, session_key, payload, status,"
            " received_at, updated_at) VALUES ('telegram.main', $1, 'e', 's', $2, 'done', 1, 1)",
            [("7", envelope_to_json(env)), ("8", "")],
        )
    finally:
        await conn.close()
    async with await Store.open_postgres(pg_empty_url) as store:
        rows = await store.db.fetchall("SELECT message_id, sender_id FROM inbox ORDER BY id")
    assert [(r["message_id"], r["sender_id"]) for r in rows] == [("7", "1001"), ("8", None)]


async def test_a_schema_newer_than_this_version_is_refused(pg_url: str) -> None:
    """A replica of an older release (a rolling restart half done, a rollback without the
    backup) must not write into tables a newer release reshaped: it does not start."""
    from bot.errors import SchemaTooNew
    from bot.store.postgres import Database

    latest = max(number for number, _, _ in pg_migrations())
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "INSERT INTO schema_migrations (number, name, applied_at) VALUES ($1, $2, 0)",
            latest + 1,
            f"{latest + 1:04d}_from_a_newer_release.sql",
        )
    finally:
        await conn.close()
    try:
        db = await Database.open(pg_url)
    except SchemaTooNew as exc:
        message = str(exc)
    else:
        await db.aclose()
        raise AssertionError("a database with a newer schema was opened")
    assert f"schema {latest + 1}" in message and f"({latest})" in message
    # hatchway doctor still reads it (and says what is wrong), without migrating
    async with await Database.open(pg_url, migrate=False) as read_only:
        assert await read_only.schema_version() == latest + 1
