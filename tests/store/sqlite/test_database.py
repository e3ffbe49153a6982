"""Statements sent to SQLite's thread in few trips: still atomic, ordered and cancel-safe."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.errors import SchemaTooNew, StorageBusy, StorageError, StorageIntegrityError
from bot.providers.base import ChatMessage
from bot.store import Database, Store
from bot.store.statements import Read, Row, Write

CREATE = "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)"
INSERT = "INSERT INTO t (v) VALUES (?)"


def inserting(*vs: str) -> Write:
    return Write(INSERT, [(v,) for v in vs])


def column(rows: list[Row]) -> list[str]:
    return [r["v"] for r in rows]


ALL = Read("SELECT v FROM t ORDER BY id", (), column)


async def values(db: Database) -> list[str]:
    return await db.read(ALL)


async def test_writes_run_in_order_and_a_read_after_them_sees_them_in_one_trip(
    tmp_path: Path,
) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        trips = db.trips
        seen = await db.commit(
            [inserting("a", "b"), Write("DELETE FROM t WHERE v = 'a'", [()])], ALL
        )
        assert seen == ["b"]
        await db.commit([inserting("c")])
        assert db.trips - trips == 2
        assert await values(db) == ["b", "c"]


async def test_nothing_to_commit_is_no_trip(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        trips = db.trips
        await db.commit([])
        assert db.trips == trips
        assert await db.commit([], ALL) == []  # a read alone
        assert db.trips == trips + 1


async def test_a_failing_write_rolls_back_everything(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(StorageIntegrityError, match="UNIQUE"):
            await db.commit([inserting("x"), inserting("y", "y")])
        assert await values(db) == []
        await db.commit([inserting("z")])  # the connection is not left in a transaction
        assert await values(db) == ["z"]


async def test_a_failing_read_after_the_writes_rolls_them_back(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(StorageError, match="no such column"):
            await db.commit([inserting("a")], Read("SELECT nope FROM t", (), column))
        assert await values(db) == []
        await db.execute("INSERT INTO t (v) VALUES ('b')")  # no transaction was left open
        assert await values(db) == ["b"]


async def test_an_error_in_a_transaction_body_rolls_it_back(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        with pytest.raises(RuntimeError):
            async with db.transaction() as tx:
                await tx.execute(INSERT, ("a",))
                raise RuntimeError("boom")
        assert await values(db) == []
        async with db.transaction() as tx:
            row = await tx.fetchone("INSERT INTO t (v) VALUES ('b') RETURNING id")
            assert row is not None
            assert [r["v"] for r in await tx.fetchall("SELECT v FROM t")] == ["b"]
        assert await values(db) == ["b"]


async def test_a_transaction_is_over_once_it_has_committed(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        async with db.transaction() as tx:
            await tx.execute(INSERT, ("a",))
        with pytest.raises(StorageError, match="not open"):
            await tx.execute(INSERT, ("b",))
        assert await values(db) == ["a"]


async def test_cancelled_while_committing_leaves_no_open_transaction(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)

        async def write(n: int) -> None:
            await db.commit([inserting(f"v{n}")])

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
        assert cancelled > 0  # the cancel did land mid-commit at least sometimes
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
            trips = db.trips
            task = asyncio.ensure_future(db.commit([inserting("a")]))
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
    """An interactive transaction's first statement goes with the BEGIN in its own trip,
    before the commit: a cancel while it is on its way must still roll it back."""
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)

        async def write(n: int) -> None:
            async with db.transaction() as tx:
                await tx.execute(INSERT, (f"a{n}",))
                await tx.execute(INSERT, (f"b{n}",))

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
        first = await db.execute_returning("INSERT INTO t (v) VALUES ('a') RETURNING id")
        assert first is not None and first["id"] == 1
        row = await db.execute_returning(
            "INSERT INTO t (v) VALUES ('a') ON CONFLICT (v) DO NOTHING RETURNING id"
        )
        assert row is None
        with pytest.raises(StorageIntegrityError):
            await db.execute("INSERT INTO t (v) VALUES ('a')")
        await db.execute("INSERT INTO t (v) VALUES ('b')")
        deleted = await db.execute_returning_all("DELETE FROM t RETURNING v")
        assert sorted(column(deleted)) == ["a", "b"]
        assert await values(db) == []


async def test_closed_database_refuses_statements(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "d.db")
    await db.aclose()
    await db.aclose()  # closing twice is harmless
    with pytest.raises(StorageError, match="closed"):
        await db.fetchall("SELECT 1")
    with pytest.raises(StorageError, match="closed"):
        await db.execute("SELECT 1")
    with pytest.raises(StorageError, match="closed"):
        await db.commit([inserting("a")])


async def test_history_appends_use_the_current_generation(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        await store.history.append("s", "t1", [ChatMessage(role="user", content="old")])
        await store.history.reset("s")
        await store.history.append("s", "t2", [ChatMessage(role="user", content="new")])
        assert [m.content for m in await store.history.load("s")] == ["new"]
        rows = await store.db.fetchall("SELECT generation FROM messages ORDER BY id")
        assert [r["generation"] for r in rows] == [0, 1]


async def test_a_database_another_connection_holds_is_busy_for_every_kind_of_write(
    tmp_path: Path,
) -> None:
    """A statement in its own transaction, a unit of work, an interactive transaction and
    the writability check all report a database another connection holds as StorageBusy
    (worth trying again; the gateway does); nothing was written."""
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        await db.execute("PRAGMA busy_timeout = 0")  # fail at once instead of after 5 s
        holder = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            with pytest.raises(StorageBusy, match="not writable") as alone:
                await db.execute("INSERT INTO t (v) VALUES ('a')")
            with pytest.raises(StorageBusy, match="not writable"):
                await db.execute_returning("INSERT INTO t (v) VALUES ('a') RETURNING id")
            with pytest.raises(StorageBusy, match="not writable"):
                await db.commit([inserting("a")])
            with pytest.raises(StorageBusy, match="not writable"):
                async with db.transaction() as tx:
                    await tx.execute(INSERT, ("a",))
            with pytest.raises(StorageBusy, match="not writable"):
                await db.check_writable()
            assert alone.value.busy and isinstance(alone.value, StorageError)
            assert isinstance(alone.value.__cause__, sqlite3.OperationalError)
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        await db.check_writable()
        await db.execute("INSERT INTO t (v) VALUES ('a')")
        assert await values(db) == ["a"]


async def test_the_writability_check_writes_nothing_in_one_trip(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        trips = db.trips
        await db.check_writable()
        assert db.trips - trips == 1
        assert await values(db) == []
        await db.commit([inserting("a")])  # no transaction was left open


async def test_a_single_statement_is_one_trip_and_all_or_nothing(tmp_path: Path) -> None:
    async with await Database.open(tmp_path / "d.db") as db:
        await db.execute(CREATE)
        await db.execute("INSERT INTO t (v) VALUES ('b')")
        trips = db.trips
        with pytest.raises(StorageIntegrityError):  # the second row conflicts
            await db.execute("INSERT INTO t (v) VALUES ('a'), ('b')")
        assert db.trips - trips == 1
        assert await values(db) == ["b"]
        await db.commit([inserting("c")])  # the connection is not left in a transaction
        assert await values(db) == ["b", "c"]


async def test_a_schema_newer_than_this_version_is_refused(tmp_path: Path) -> None:
    """A daemon of an older release (a rollback without the backup) must not write into
    tables a newer release reshaped: it does not start. PostgreSQL's rule, and its words."""
    from bot.store.sqlite.schema import migrations

    latest = max(number for number, _, _ in migrations())
    path = tmp_path / "d.db"
    async with await Database.open(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={latest + 1}")
    conn.close()
    with pytest.raises(SchemaTooNew) as refused:
        await Store.open(path)
    message = str(refused.value)
    assert f"schema {latest + 1}" in message and f"({latest})" in message
    assert str(path) in message and "backup" in message
    # hatchway doctor still reads it (and says what is wrong), without migrating
    async with await Database.open(path, migrate=False) as read_only:
        assert await read_only.schema_version() == latest + 1
