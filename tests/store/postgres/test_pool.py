"""The PostgreSQL engine's own pool against a real server: never more than ``pool_size``
connections, a caller cancelled while it waits for one leaves the pool whole, a connection
handed back in a transaction is cut (its writes rolled back), one the server closed is
replaced, and closing waits for the unit in use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from bot.errors import StorageUnavailable
from bot.store.postgres import Database
from bot.store.statements import Read


@pytest.fixture
async def raw(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(pg_url)
    try:
        yield conn
    finally:
        await conn.close()


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never came to pass")


async def backends(raw: asyncpg.Connection) -> list[int]:
    rows = await raw.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'hatchway'"
        " AND datname = current_database()"
    )
    return [int(r["pid"]) for r in rows]


async def test_units_beyond_the_size_wait_for_a_connection(
    pg_url: str, raw: asyncpg.Connection
) -> None:
    async with await Database.open(pg_url, pool_size=2) as db:
        seen: list[int] = []

        async def slow(i: int) -> int:
            row = await db.fetchone("SELECT pg_sleep(0.05), ?::int AS i", (i,))
            seen.append(len(await backends(raw)))
            assert row is not None
            return int(row["i"])

        assert await asyncio.gather(*(slow(i) for i in range(8))) == list(range(8))
        assert max(seen) <= 2
        assert db._pool.in_use == 0


async def test_a_caller_cancelled_while_waiting_leaves_the_pool_whole(pg_url: str) -> None:
    async with await Database.open(pg_url, pool_size=1) as db:
        async with db.transaction() as tx:  # holds the only connection
            await tx.execute("CREATE TABLE t (v INT)")
            waiting = asyncio.ensure_future(db.execute("INSERT INTO t VALUES (1)"))
            await until(lambda: len(db._pool._waiters) == 1)
            waiting.cancel()
            await asyncio.sleep(0.05)
            assert not waiting.done()  # the unit waits on: it is seen to its end
        with pytest.raises(asyncio.CancelledError):
            await waiting  # settled: it ran once the connection came back
        assert await db.fetchall("SELECT v FROM t") == [(1,)]
        assert db._pool.in_use == 0
        await db.check_writable()


async def test_a_connection_given_back_in_a_transaction_is_cut(
    pg_url: str, raw: asyncpg.Connection
) -> None:
    async with await Database.open(pg_url, pool_size=1) as db:
        await db.execute("CREATE TABLE t (v INT)")
        conn = await db._acquire()
        first = conn.get_server_pid()
        await conn.execute("BEGIN")
        await conn.execute("INSERT INTO t VALUES (1)")
        await db._release(conn)
        assert conn.is_closed()
        row = await db.fetchone("SELECT pg_backend_pid() AS pid, count(*) AS n FROM t")
        assert row is not None and row["n"] == 0 and row["pid"] != first
        assert db._pool.in_use == 0


async def test_a_connection_the_server_closed_is_replaced(
    pg_url: str, raw: asyncpg.Connection
) -> None:
    read = Read("SELECT pg_backend_pid() AS pid", (), lambda rows: int(rows[0]["pid"]))
    async with await Database.open(pg_url, pool_size=1) as db:
        first = await db.read(read)
        await raw.execute("SELECT pg_terminate_backend($1)", first)
        for _ in range(500):  # the backend ends a moment after the signal
            if first not in await backends(raw):
                break
            await asyncio.sleep(0.01)
        failures = 0
        for _ in range(3):  # the cut shows at most once, as the connection is found lost
            try:
                second = await db.read(read)
                break
            except StorageUnavailable:
                failures += 1
        assert failures <= 1 and second != first
        assert db._pool.in_use == 0


async def test_closing_waits_for_the_unit_in_use(pg_url: str, raw: asyncpg.Connection) -> None:
    db = await Database.open(pg_url, pool_size=2)
    unit = asyncio.ensure_future(db.fetchone("SELECT pg_sleep(0.3), 7 AS n"))
    await until(lambda: db._pool.in_use == 1)
    await db.aclose()
    row = await unit
    assert row is not None and row["n"] == 7
    for _ in range(100):
        if not await backends(raw):
            break
        await asyncio.sleep(0.05)
    assert await backends(raw) == []
