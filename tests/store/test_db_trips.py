"""Transactions sent to SQLite's thread in few trips: still atomic, ordered and cancel-safe."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.providers.base import ChatMessage
from bot.store import Database, Store

CREATE = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"


async def values(db: Database) -> list[str]:
    return [r["v"] for r in await db.fetchall("SELECT v FROM t ORDER BY id")]


async def test_queued_statements_run_in_order_before_a_read(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        async with db.transaction() as tx:
            await tx.executemany("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)])
            row = await tx.fetchone("SELECT COUNT(*) AS n FROM t")
            assert row is not None and row["n"] == 2
            await tx.executemany("INSERT INTO t (v) VALUES (?)", [("c",)])
        assert await values(db) == ["a", "b", "c"]


async def test_a_failing_queued_statement_rolls_back_everything(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(sqlite3.IntegrityError):
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO t (v) VALUES ('x')")
                await tx.executemany("INSERT INTO t (v) VALUES (?)", [("y",), ("y",)])
        assert await values(db) == []
        async with db.transaction() as tx:  # the connection is not left in a transaction
            await tx.executemany("INSERT INTO t (v) VALUES (?)", [("z",)])
        assert await values(db) == ["z"]


async def test_an_error_in_the_body_discards_queued_statements(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await tx.executemany("INSERT INTO t (v) VALUES (?)", [("a",)])
                raise RuntimeError("boom")
        assert await values(db) == []


async def test_cancelled_while_committing_leaves_no_open_transaction(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)

        async def write(n: int) -> None:
            async with db.transaction() as tx:
                await tx.executemany("INSERT INTO t (v) VALUES (?)", [(f"v{n}",)])

        cancelled = 0
        for n in range(50):
            task = asyncio.ensure_future(write(n))
            for _ in range(n % 4):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task  # may have committed before the cancel landed: both are fine
            except asyncio.CancelledError:
                cancelled += 1
        assert cancelled > 0  # the cancel did land mid-transaction at least sometimes
        await write(999)  # BEGIN would fail if a transaction had been left open
        assert "v999" in await values(db)


async def test_a_task_cancelled_during_its_commit_ends_once_the_commit_is_done(
    tmp_path: Path,
) -> None:
    """Another process holds the write lock, so the commit's trip waits in BEGIN IMMEDIATE
    on the worker thread; cancelling the task does not end it before that trip has run."""
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        holder = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")

            async def write() -> None:
                async with db.transaction() as tx:
                    await tx.executemany("INSERT INTO t (v) VALUES (?)", [("a",)])

            trips = db.trips
            task = asyncio.ensure_future(write())
            await asyncio.sleep(0)  # the task runs up to waiting for its commit
            assert db.trips == trips + 1
            task.cancel()
            for _ in range(5):
                await asyncio.sleep(0)
            assert not task.done()  # still waiting for its commit to settle
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await values(db) == ["a"]


async def test_cancelled_after_begin_leaves_no_open_transaction(tmp_path: Path) -> None:
    """A statement that returns something goes with the BEGIN in its own trip, before the
    commit: a cancel while it is on its way must still roll the transaction back."""
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)

        async def write(n: int) -> None:
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO t (v) VALUES (?)", (f"a{n}",))
                await tx.execute("INSERT INTO t (v) VALUES (?)", (f"b{n}",))

        cancelled = 0
        for n in range(50):
            task = asyncio.ensure_future(write(n))
            for _ in range(n % 6):
                await asyncio.sleep(0)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                cancelled += 1
        assert cancelled > 0
        await write(999)  # BEGIN would fail if a transaction had been left open
        written = await values(db)
        assert "a999" in written
        pairs = {v[1:] for v in written}
        assert sorted(written) == sorted([f"a{n}" for n in pairs] + [f"b{n}" for n in pairs])


async def test_single_statements_keep_their_answers(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        assert await db.execute("INSERT INTO t (v) VALUES ('a')") == 1
        row = await db.execute_returning(
            "INSERT INTO t (v) VALUES ('a') ON CONFLICT (v) DO NOTHING RETURNING id"
        )
        assert row is None
        with pytest.raises(sqlite3.IntegrityError):
            await db.execute("INSERT INTO t (v) VALUES ('a')")
        assert await values(db) == ["a"]


async def test_closed_database_refuses_statements(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "d.db")
    await db.aclose()
    with pytest.raises(StorageError):
        await db.fetchall("SELECT 1")
    with pytest.raises(StorageError):
        await db.execute("SELECT 1")


async def test_history_appends_use_the_current_generation(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        await store.history.append("s", "t1", [ChatMessage(role="user", content="old")])
        await store.history.reset("s")
        await store.history.append("s", "t2", [ChatMessage(role="user", content="new")])
        assert [m.content for m in await store.history.load("s")] == ["new"]
        rows = await store.db.fetchall("SELECT generation FROM messages ORDER BY id")
        assert [r["generation"] for r in rows] == [0, 1]


async def test_a_read_marked_last_commits_in_the_same_trip(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        trips = db.trips
        async with db.transaction() as tx:
            await tx.executemany("INSERT INTO t (v) VALUES (?)", [("a",), ("b",)])
            rows = await tx.fetchall("SELECT v FROM t ORDER BY id", last=True)
            assert [r["v"] for r in rows] == ["a", "b"]
            with pytest.raises(StorageError):  # the transaction is over
                await tx.executemany("INSERT INTO t (v) VALUES (?)", [("c",)])
        assert db.trips - trips == 1
        assert await values(db) == ["a", "b"]


async def test_a_failing_last_read_rolls_back_the_transaction(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(sqlite3.OperationalError):
            async with db.transaction() as tx:
                await tx.executemany("INSERT INTO t (v) VALUES (?)", [("a",)])
                await tx.fetchall("SELECT nope FROM t", last=True)
        assert await values(db) == []
        await db.execute("INSERT INTO t (v) VALUES ('b')")  # no transaction was left open
        assert await values(db) == ["b"]


async def test_a_single_statement_on_a_locked_database_raises_storage_error(
    tmp_path: Path,
) -> None:
    """A statement in its own transaction (no BEGIN of ours) reports a database that cannot
    be written as StorageError, as a failing BEGIN IMMEDIATE does; its own errors (e.g. a
    constraint) stay sqlite3 errors."""
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        await db.execute("PRAGMA busy_timeout = 0")  # fail at once instead of after 5 s
        holder = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StorageError, match="not writable") as alone:
                await db.execute("INSERT INTO t (v) VALUES ('a')")
            with pytest.raises(StorageError, match="not writable"):
                await db.execute_returning("INSERT INTO t (v) VALUES ('a') RETURNING id")
            with pytest.raises(StorageError, match="not writable") as begun:
                async with db.transaction():
                    pass
            # another connection holds it: worth trying again (the gateway does)
            assert alone.value.busy and begun.value.busy
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert await db.execute("INSERT INTO t (v) VALUES ('a')") == 1
        assert await values(db) == ["a"]


async def test_a_single_statement_is_one_trip_and_all_or_nothing(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        await db.execute("INSERT INTO t (v) VALUES ('b')")
        trips = db.trips
        with pytest.raises(sqlite3.IntegrityError):  # the second row conflicts
            await db.execute("INSERT INTO t (v) VALUES ('a'), ('b')")
        assert db.trips - trips == 1
        assert await values(db) == ["b"]
        async with db.transaction() as tx:  # the connection is not left in a transaction
            await tx.executemany("INSERT INTO t (v) VALUES (?)", [("c",)])
        assert await values(db) == ["b", "c"]
