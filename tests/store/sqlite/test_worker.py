"""The database thread: jobs run in the order they were queued, on one connection, and
what SQLite raises reaches the caller as a StorageError."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.errors import StorageError, StorageIntegrityError
from bot.store.sqlite.worker import SqliteWorker


def connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def test_jobs_run_in_order_on_one_thread(tmp_path: Path) -> None:
    worker = await SqliteWorker.start(tmp_path / "w.db", lambda: connect(tmp_path / "w.db"))
    seen: list[tuple[int, int]] = []

    def job(n: int) -> Callable[[sqlite3.Connection], int]:
        def run(conn: sqlite3.Connection) -> int:
            seen.append((n, threading.get_ident()))
            return int(conn.execute("SELECT ?", (n,)).fetchone()[0])

        return run

    futures = [worker.submit(job(n)) for n in range(20)]  # queued without awaiting
    assert await asyncio.gather(*futures) == list(range(20))
    assert [n for n, _ in seen] == list(range(20))
    assert len({thread for _, thread in seen}) == 1
    assert seen[0][1] != threading.get_ident()
    await worker.aclose()
    assert not [t for t in threading.enumerate() if t.name == "sqlite w.db"]  # it ended
    await worker.aclose()  # closing twice is harmless
    with pytest.raises(StorageError, match="closed"):
        worker.submit(job(99))


async def test_a_job_queued_before_close_still_runs(tmp_path: Path) -> None:
    worker = await SqliteWorker.start(tmp_path / "w.db", lambda: connect(tmp_path / "w.db"))
    pending = worker.submit(lambda conn: conn.execute("SELECT 7").fetchone()[0])
    await worker.aclose()
    assert await pending == 7


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("SELECT nope", StorageError, "no such column"),
        ("INSERT INTO t VALUES (1)", StorageIntegrityError, "UNIQUE"),
        ("SELECT 1; SELECT 2", StorageError, "one statement at a time"),
    ],
)
async def test_what_sqlite_raises_is_mapped(
    tmp_path: Path, sql: str, error: type[StorageError], message: str
) -> None:
    path = tmp_path / "w.db"
    worker = await SqliteWorker.start(path, lambda: connect(path))
    await worker.submit(lambda conn: conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
    await worker.submit(lambda conn: conn.execute("INSERT INTO t VALUES (1)"))
    with pytest.raises(error, match=message) as raised:
        await worker.submit(lambda conn: conn.execute(sql))
    assert type(raised.value) is error
    assert str(path) in str(raised.value)
    assert isinstance(raised.value.__cause__, sqlite3.Error | sqlite3.Warning)
    # the connection carries on
    assert await worker.submit(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
    await worker.aclose()


async def test_errors_of_our_own_pass_unchanged(tmp_path: Path) -> None:
    worker = await SqliteWorker.start(tmp_path / "w.db", lambda: connect(tmp_path / "w.db"))

    def fails(_conn: sqlite3.Connection) -> None:
        raise ValueError("ours")

    with pytest.raises(ValueError, match="ours"):
        await worker.submit(fails)
    await worker.aclose()


async def test_a_connection_that_cannot_open_is_a_storage_error(tmp_path: Path) -> None:
    missing = tmp_path / "no such folder" / "w.db"
    with pytest.raises(StorageError, match="cannot open database"):
        await SqliteWorker.start(missing, lambda: connect(missing))
