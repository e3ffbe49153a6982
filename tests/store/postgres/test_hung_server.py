"""A PostgreSQL server that stops answering (a real server behind a link the test freezes:
nothing is closed, no byte goes through, as with a server stopped by SIGSTOP or a connection
black-holed on the way): a statement fails as StorageUnavailable after ``command_timeout_s``
instead of waiting for ever, opening a connection after ``connect_timeout_s``, and the
database is usable again once the link carries. Migrations are not bounded by the statement
timeout: they wait for another opener's lock as long as it takes.

The guard around each call (``asyncio.timeout``) only stops the test from hanging when the
timeout is missing; nothing measures how long anything took."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import asyncpg
import pytest

from bot.errors import StorageUnavailable
from bot.store.postgres import Database, migrations
from bot.store.postgres.schema import MIGRATION_LOCK
from bot.store.statements import Write
from tests.fakes.db_link import DatabaseLink

GUARD_S = 60.0
"""Far above every timeout configured here: reached only when a call hangs."""


@pytest.fixture
async def link(pg_url: str) -> AsyncIterator[DatabaseLink]:
    parts = urlsplit(pg_url)
    assert parts.hostname is not None and parts.port is not None
    async with DatabaseLink(parts.hostname, parts.port) as opened:
        yield opened


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    return parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}").geturl()


async def test_a_statement_the_server_never_answers_fails_and_the_database_comes_back(
    link: DatabaseLink, pg_url: str
) -> None:
    db = await Database.open(
        through(pg_url, link.port), pool_size=2, command_timeout_s=0.5, connect_timeout_s=0.5
    )
    try:
        await db.execute("INSERT INTO channel_state (channel, key, value) VALUES ('t.m', 'k', '1')")
        link.freeze()
        async with asyncio.timeout(GUARD_S):
            with pytest.raises(StorageUnavailable):
                await db.fetchone("SELECT value FROM channel_state WHERE key = 'k'")
            with pytest.raises(StorageUnavailable):
                await db.commit(
                    [Write("UPDATE channel_state SET value = ? WHERE key = 'k'", [("2",)])]
                )
            with pytest.raises(StorageUnavailable):
                async with db.transaction() as tx:
                    await tx.execute("UPDATE channel_state SET value = '3' WHERE key = 'k'")
        link.thaw()
        async with asyncio.timeout(GUARD_S):
            row = await db.fetchone("SELECT value FROM channel_state WHERE key = 'k'")
        assert row is not None and row["value"] == "1"  # nothing that failed was written
    finally:
        link.thaw()
        await db.aclose()


async def test_opening_through_a_server_that_never_answers_fails_as_unavailable(
    link: DatabaseLink, pg_url: str
) -> None:
    link.freeze()
    async with asyncio.timeout(GUARD_S):
        with pytest.raises(StorageUnavailable, match="cannot open database"):
            await Database.open(through(pg_url, link.port), connect_timeout_s=0.5)


async def test_migrations_wait_for_another_openers_lock_beyond_the_statement_timeout(
    pg_empty_url: str,
) -> None:
    holder = await asyncpg.connect(pg_empty_url)
    try:
        await holder.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})")
        opening = asyncio.create_task(
            Database.open(pg_empty_url, command_timeout_s=0.2, connect_timeout_s=5.0)
        )
        async with asyncio.timeout(GUARD_S):
            while not await holder.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ):
                assert not opening.done(), opening.exception()
                await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # well past the statement timeout, still waiting
        assert not opening.done()
        await holder.execute(f"SELECT pg_advisory_unlock({MIGRATION_LOCK})")
        async with asyncio.timeout(GUARD_S):
            db = await opening
        try:
            assert await db.schema_version() == max(n for n, _, _ in migrations())
        finally:
            await db.aclose()
    finally:
        await holder.close()


@pytest.mark.long
async def test_a_transaction_cut_off_in_its_middle_lets_its_rows_go(
    link: DatabaseLink, pg_url: str
) -> None:
    """A replica whose link goes silent between two statements of a transaction (a row
    written, the commit not yet heard) cannot hold that row against the others: the server
    ends the session once it has been idle in its transaction for
    IDLE_IN_TRANSACTION_TIMEOUT_MS, and another connection's write goes through. Without it
    the row stayed locked until TCP gave up on the silent client, and every other write to it
    failed on its lock timeout."""
    db = await Database.open(through(pg_url, link.port), pool_size=2, connect_timeout_s=5)
    other = await asyncpg.connect(pg_url)
    try:
        await db.execute("INSERT INTO channel_state (channel, key, value) VALUES ('t.m', 'k', '1')")
        cut_off = asyncio.Event()

        async def write_then_go_silent() -> None:
            async with db.transaction() as tx:
                await tx.execute("UPDATE channel_state SET value = '2' WHERE key = 'k'")
                link.freeze()
                cut_off.set()
                await tx.execute("UPDATE channel_state SET value = '3' WHERE key = 'k'")

        silent = asyncio.create_task(write_then_go_silent())
        await cut_off.wait()
        async with asyncio.timeout(GUARD_S):
            while True:  # each try waits out the lock timeout while the row is held
                try:
                    await other.execute("UPDATE channel_state SET value = '4' WHERE key = 'k'")
                    break
                except asyncpg.LockNotAvailableError:
                    continue
        assert await other.fetchval("SELECT value FROM channel_state WHERE key = 'k'") == "4"
        link.thaw()
        with pytest.raises(StorageUnavailable):
            await asyncio.wait_for(silent, GUARD_S)
    finally:
        link.thaw()
        await other.close()
        await db.aclose()
