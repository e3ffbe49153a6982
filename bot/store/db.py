"""The SQLite engine: one connection on a thread of ours, WAL, numbered migrations at open.

Every statement goes through :class:`Database`, which runs it on the connection's
:class:`~bot.store.worker.SqliteWorker` thread and keeps an interactive
:class:`Transaction` of one task from swallowing a statement of another. Nothing outside
``bot/store`` writes SQL, and no ``sqlite3`` error leaves it: the worker maps them into
:class:`~bot.errors.StorageError` and its subclasses (:mod:`bot.store.sqlite_errors`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TypeVar, cast, overload

import structlog

from bot.errors import StorageError
from bot.store.sqlite_errors import (
    NOT_WRITABLE,
    EngineError,
    mapped,
    result_code,
    storage_error,
)
from bot.store.statements import Params, Read, Row, Write
from bot.store.worker import Job, SqliteWorker

__all__ = ["Database", "Params", "Row", "Transaction"]

log = structlog.get_logger(__name__)

T = TypeVar("T")


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("bot.store") / "migrations"
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class Transaction:
    """An interactive write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``) for a repository
    whose writes depend on what it reads: ``async with db.transaction() as tx``. Its
    statements commit together when the block ends, or roll back if it raises. Writes
    that do not depend on a read inside the transaction go in a
    :class:`~bot.store.unit_of_work.UnitOfWork` instead (one trip, no lock held across
    awaits).

    ``BEGIN`` travels with the first statement, and each statement is one trip to the
    worker thread; the commit is one more. The database's lock keeps every other statement
    off the connection until the commit is queued. The worker runs its queue in order, so
    the lock is released as soon as the commit is queued, not once it is done: the next
    caller's statements queue up behind it. A commit that fails rolls back on the worker
    thread before anything queued after it runs, and a task cancelled while it waits on the
    commit still lets it settle, so the shared connection never stays inside a transaction.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._begin = True
        self._committed = False
        self._locked = False

    async def __aenter__(self) -> Transaction:
        await self._db._lock.acquire()
        self._locked = True
        try:
            self._db._check_open()
        except BaseException:
            self._unlock()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is not None:
                if not self._committed:  # a committing trip that failed rolled back itself
                    await _settle(self._db._rollback())
                return
            if not self._committed:
                committed = self._db._submit(self._take(None, commit=True))
                self._unlock()
                await _settle(committed)
        finally:
            self._unlock()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns ``lastrowid`` (SQLite's; a query shared with another
        engine says ``RETURNING id`` and uses :meth:`fetchone`)."""
        return cast(int | None, await self._trip(_Statement(sql, params, _LASTROWID))) or 0

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._trip(_Statement(sql, params, _ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._trip(_Statement(sql, params, _ONE)))

    def _check_open(self) -> None:
        if self._committed or not self._locked:
            raise StorageError("the transaction is not open")

    def _take(self, statement: _Statement | None, *, commit: bool) -> _Trip:
        self._check_open()
        trip = _Trip(path=self._db.path, begin=self._begin, statement=statement, commit=commit)
        self._begin = False
        self._committed = commit
        return trip

    async def _trip(self, statement: _Statement) -> object:
        return await self._db._submit(self._take(statement, commit=False))

    def _unlock(self) -> None:
        if self._locked:
            self._locked = False
            self._db._lock.release()


class Database:
    """An open SQLite file. Use :meth:`open` and :meth:`aclose` (or ``async with``).

    The engine behind :class:`bot.store.Store`: the repositories hand it their statements
    (:mod:`bot.store.statements`), and it decides how they travel. A PostgreSQL engine
    would offer the same methods (see the Storage section of ``docs/architecture.md``).
    """

    def __init__(self, path: Path, worker: SqliteWorker) -> None:
        self.path = path
        self._worker = worker
        self._lock = asyncio.Lock()
        self._closed = False
        self.trips = 0
        """Round trips to the worker thread since the database was opened (what
        ``bench/throughput.py`` reports per turn, and what tests of batching count)."""

    @classmethod
    async def open(cls, path: str | Path) -> Database:
        """Open (creating it if needed) and migrate the database at ``path``; StorageError
        when it cannot be opened or prepared."""
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot open database {file}: {exc}") from None
        worker = await SqliteWorker.start(file, lambda: _connect(file))
        db = cls(file, worker)
        try:
            current = await db._submit(_Prepare(file))
            for number, name, sql in _migrations():
                if number > current:
                    log.info("db_migration_applying", migration=name)
                    await db._submit(_Migration(file, number, sql))
        except BaseException:
            await worker.aclose()
            raise
        return db

    async def schema_version(self) -> int:
        row = await self.fetchone("PRAGMA user_version")
        return int(row[0]) if row else 0

    async def integrity_check(self) -> str:
        row = await self.fetchone("PRAGMA integrity_check")
        return str(row[0]) if row else "no answer"

    async def check_writable(self) -> None:
        """Return when the database accepts a write transaction now (one trip; nothing is
        written); StorageError (StorageBusy when another connection holds it) otherwise."""
        async with self._lock:
            self._check_open()
            done = self._submit(_Trip(path=self.path, begin=True, statement=None, commit=True))
        await _settle(done)

    def transaction(self) -> Transaction:
        """An interactive write transaction: ``async with db.transaction() as tx`` (see
        :class:`Transaction`)."""
        return Transaction(self)

    @overload
    async def commit(self, writes: Sequence[Write]) -> None: ...

    @overload
    async def commit(self, writes: Sequence[Write], then: Read[T]) -> T: ...

    async def commit(self, writes: Sequence[Write], then: Read[T] | None = None) -> T | None:
        """Run ``writes`` in order in one transaction, then the query ``then`` (which sees
        them), and commit: all of it in one trip to the worker thread. Nothing is written if
        any of it fails. No writes: ``then`` runs as a plain read; nothing at all: no trip."""
        if not writes:
            if then is None:
                return None
            return await self.read(then)
        statement = None if then is None else _Statement(then.sql, then.params, _ALL)
        trip = _Trip(path=self.path, begin=True, statement=statement, commit=True, writes=writes)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        rows = await _settle(done)
        return None if then is None else then.decode(cast(list[Row], rows))

    async def read(self, query: Read[T]) -> T:
        """Run ``query`` (one trip) and decode its rows."""
        return query.decode(await self.fetchall(query.sql, query.params))

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement in its own transaction (one round trip); returns ``lastrowid``."""
        return cast(int | None, await self._alone(_Statement(sql, params, _LASTROWID))) or 0

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns its first row."""
        return cast(Row | None, await self._alone(_Statement(sql, params, _ONE)))

    async def execute_returning_all(self, sql: str, params: Params = ()) -> list[Row]:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns all its rows."""
        return cast(list[Row], await self._alone(_Statement(sql, params, _ALL)))

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._read(_Statement(sql, params, _ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._read(_Statement(sql, params, _ONE)))

    async def aclose(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            await self._worker.aclose()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------------

    async def _alone(self, statement: _Statement) -> object:
        # SQLite's own statement transaction: a writing statement takes the write lock when
        # it starts (waiting up to busy_timeout, like BEGIN IMMEDIATE) and commits when it
        # finishes, all or nothing. One sqlite3 call instead of three on the worker thread,
        # each of which gives up the GIL and may wait a switch interval to get it back.
        trip = _Trip(path=self.path, begin=False, statement=statement, commit=False, alone=True)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await _settle(done)

    async def _read(self, statement: _Statement) -> object:
        trip = _Trip(path=self.path, begin=False, statement=statement, commit=False)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await done

    async def _rollback(self) -> None:
        """Roll back if a transaction is open, decided on the worker thread after every
        statement queued before it has run."""
        await self._submit(_rollback_if_open)

    def _submit(self, job: Job[T]) -> asyncio.Future[T]:
        """Queue ``job`` on the worker thread (one round trip, however many statements it
        runs). Queuing without awaiting is what lets a commit be queued under the lock and
        awaited outside it."""
        future = self._worker.submit(job)
        self.trips += 1
        return future

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"database {self.path} is closed")


async def _settle(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to completion even if the caller is cancelled meanwhile; the
    cancellation is re-raised once it has settled."""
    task = asyncio.ensure_future(awaitable)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                continue
        raise


# -- on the worker thread ---------------------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(str(path), isolation_level=None)
    connection.row_factory = sqlite3.Row
    return connection


@dataclass(frozen=True, slots=True)
class _Prepare:
    """Set the connection up; returns the schema version the file is at."""

    path: Path

    def __call__(self, conn: sqlite3.Connection) -> int:
        with mapped(f"cannot prepare database {self.path}"):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            row = conn.execute("PRAGMA user_version").fetchone()
        return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class _Migration:
    """Apply one numbered migration in its own transaction."""

    path: Path
    number: int
    sql: str

    def __call__(self, conn: sqlite3.Connection) -> None:
        with mapped(f"cannot prepare database {self.path}"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _split_sql(self.sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version={self.number}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise


def _split_sql(script: str) -> list[str]:
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


_LASTROWID, _ONE, _ALL = "lastrowid", "one", "all"


@dataclass(frozen=True, slots=True)
class _Statement:
    sql: str
    params: Params
    answer: str  # _LASTROWID, _ONE or _ALL


@dataclass(frozen=True, slots=True, kw_only=True)
class _Trip:
    """What one round trip to the worker thread runs, in order: ``BEGIN IMMEDIATE`` (if
    due), the ``writes``, one statement whose answer is returned, ``COMMIT`` (if due).

    ``alone``: the statement is its own transaction (no ``BEGIN``/``COMMIT``; SQLite
    commits it when it finishes); a database that cannot be written then raises
    :class:`StorageError` saying so, as a failing ``BEGIN IMMEDIATE`` or ``COMMIT`` does."""

    path: Path
    begin: bool
    statement: _Statement | None
    commit: bool
    writes: Sequence[Write] = ()
    alone: bool = False

    def __call__(self, conn: sqlite3.Connection) -> object:
        if self.alone:
            try:
                return self._run(conn)
            except sqlite3.OperationalError as exc:
                if result_code(exc) not in NOT_WRITABLE:
                    raise
                raise storage_error(exc, f"database {self.path} is not writable") from exc
        if not self.commit:
            return self._run(conn)
        try:
            return self._run(conn)
        except BaseException:
            # nothing queued after a commit may find the connection inside this transaction
            _rollback_if_open(conn)
            raise

    def _run(self, conn: sqlite3.Connection) -> object:
        if self.begin:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except EngineError as exc:
                raise storage_error(exc, f"database {self.path} is not writable") from exc
        for write in self.writes:
            conn.executemany(write.sql, write.rows)
        answer: object = None
        if self.statement is not None:
            cursor = conn.execute(self.statement.sql, self.statement.params)
            try:
                if self.statement.answer == _ONE and self.alone:
                    # stepped to the end: the statement (and so its transaction) is finished
                    rows = cursor.fetchall()
                    answer = rows[0] if rows else None
                elif self.statement.answer == _ONE:
                    answer = cursor.fetchone()
                elif self.statement.answer == _ALL:
                    answer = cursor.fetchall()
                else:
                    answer = cursor.lastrowid
            finally:
                cursor.close()
        if self.commit:
            try:
                conn.execute("COMMIT")
            except EngineError as exc:
                raise storage_error(exc, f"database {self.path} could not commit") from exc
        return answer


def _rollback_if_open(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
