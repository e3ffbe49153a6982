"""The SQLite database: one aiosqlite connection, WAL, numbered migrations applied at open.

Every statement goes through :class:`Database`, which serialises access to the single
connection with a lock so that a transaction of one task never swallows a statement of
another. Nothing outside ``bot/store`` writes SQL.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar, cast

import aiosqlite
import structlog

from bot.errors import StorageError

log = structlog.get_logger(__name__)

T = TypeVar("T")
Params = Sequence[Any]
Row = sqlite3.Row


def _migrations() -> list[tuple[int, str, str]]:
    folder = resources.files("bot.store") / "migrations"
    found: list[tuple[int, str, str]] = []
    for entry in folder.iterdir():
        name = entry.name
        if name.endswith(".sql") and name[:4].isdigit():
            found.append((int(name[:4]), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class Transaction:
    """Statements run inside :meth:`Database.transaction`; committed together.

    Every statement runs on aiosqlite's one worker thread, and each trip there and back costs
    the event loop far more than a small SQLite statement does. So a transaction travels in
    as few trips as its results allow: ``executemany`` (which returns nothing) is queued and
    sent with the next statement that returns something, or with the ``COMMIT``; ``BEGIN``
    is sent with the first of them. A transaction that only writes is one trip; its
    statements still run in order, inside the transaction, before the commit.
    """

    def __init__(self, db: Database, *, begin: bool) -> None:
        self._db = db
        self._begin = begin
        self._pending: list[tuple[str, list[Params]]] = []
        self._committed = False

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns ``lastrowid``."""
        return cast(int | None, await self._trip(_Statement(sql, params, _LASTROWID))) or 0

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Queue a statement for every row; it runs before the next statement or the commit
        (an error in it is raised there)."""
        self._pending.append((sql, list(rows)))

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._trip(_Statement(sql, params, _ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._trip(_Statement(sql, params, _ONE)))

    def _take(self, statement: _Statement | None, *, commit: bool) -> _Trip:
        trip = _Trip(
            path=self._db.path,
            begin=self._begin,
            pending=self._pending,
            statement=statement,
            commit=commit,
        )
        self._begin = False
        self._pending = []
        self._committed = commit
        return trip

    async def _trip(self, statement: _Statement | None, *, commit: bool = False) -> object:
        return await self._db._call(self._take(statement, commit=commit))


class Database:
    """An open SQLite file. Use :meth:`open` and :meth:`aclose` (or ``async with``)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self._conn = conn
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, path: str | Path) -> Database:
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(str(file), isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open database {file}: {exc}") from None
        conn.row_factory = sqlite3.Row
        db = cls(file, conn)
        try:
            await db._configure()
            await db._migrate()
        except sqlite3.Error as exc:
            await conn.close()
            raise StorageError(f"cannot prepare database {file}: {exc}") from None
        return db

    async def _configure(self) -> None:
        await self._conn.execute("PRAGMA journal_mode=WAL")
        await self._conn.execute("PRAGMA synchronous=NORMAL")
        await self._conn.execute("PRAGMA foreign_keys=ON")
        await self._conn.execute("PRAGMA busy_timeout=5000")

    async def _migrate(self) -> None:
        cursor = await self._conn.execute("PRAGMA user_version")
        row = await cursor.fetchone()
        current = int(row[0]) if row else 0
        for number, name, sql in _migrations():
            if number <= current:
                continue
            log.info("db_migration_applying", migration=name)
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _split_sql(sql):
                    await self._conn.execute(statement)
                await self._conn.execute(f"PRAGMA user_version={number}")
                await self._conn.execute("COMMIT")
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise

    async def schema_version(self) -> int:
        row = await self.fetchone("PRAGMA user_version")
        return int(row[0]) if row else 0

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Transaction]:
        """Serialised write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``).

        ``BEGIN`` travels with the first statement that needs an answer, or with the commit
        (see :class:`Transaction`); the lock keeps every other statement off the connection
        until the commit is queued. The worker thread runs its queue in order, so the lock
        is released as soon as the commit is queued, not once it is done: the next
        transaction's statements queue up behind it instead of waiting for the event loop to
        hear back. A commit that fails rolls back on the worker thread before anything queued
        after it runs, and a task cancelled while it waits on the commit still lets it
        settle, so the shared connection never stays inside a transaction.
        """
        await self._lock.acquire()
        locked = True
        try:
            self._check_open()
            tx = Transaction(self, begin=True)
            try:
                yield tx
            except BaseException:
                await _settle(self._rollback())
                raise
            if not tx._committed:
                committed = self._submit(tx._take(None, commit=True))
                self._lock.release()
                locked = False
                await _settle(committed)
        finally:
            if locked:
                self._lock.release()

    async def _rollback(self) -> None:
        """Roll back if a transaction is open, decided on the worker thread after every
        statement queued before it has run."""
        await self._submit(_rollback_if_open)

    def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue ``fn`` to run with the connection on aiosqlite's worker thread (one round
        trip, however many statements ``fn`` runs); the future tells when it has run.

        This is what aiosqlite's own methods do through ``Connection._execute``: a
        ``(future, function)`` pair on its ``_tx`` queue, which its one thread works through
        in order; ``_conn`` is the ``sqlite3.Connection`` that thread owns. Queuing without
        awaiting is what lets a commit be queued under the lock and awaited outside it.
        """
        conn = self._conn
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        conn._tx.put_nowait((future, functools.partial(fn, conn._conn)))
        return future

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._submit(fn)

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement in its own transaction (one round trip); returns ``lastrowid``."""
        return cast(int | None, await self._alone(_Statement(sql, params, _LASTROWID))) or 0

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns its first row."""
        return cast(Row | None, await self._alone(_Statement(sql, params, _ONE)))

    async def _alone(self, statement: _Statement) -> object:
        trip = _Trip(path=self.path, begin=True, pending=[], statement=statement, commit=True)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await _settle(done)

    async def _read(self, statement: _Statement) -> object:
        trip = _Trip(path=self.path, begin=False, pending=[], statement=statement, commit=False)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await done

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._read(_Statement(sql, params, _ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._read(_Statement(sql, params, _ONE)))

    async def integrity_check(self) -> str:
        row = await self.fetchone("PRAGMA integrity_check")
        return str(row[0]) if row else "no answer"

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"database {self.path} is closed")

    async def aclose(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            await self._conn.close()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
    still due), the queued ``executemany`` statements, one statement whose answer is
    returned, ``COMMIT``. Runs on the worker thread."""

    path: Path
    begin: bool
    pending: list[tuple[str, list[Params]]]
    statement: _Statement | None
    commit: bool

    def __call__(self, conn: sqlite3.Connection) -> object:
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
            except sqlite3.Error as exc:
                raise StorageError(f"database {self.path} is not writable: {exc}") from None
        for sql, rows in self.pending:
            conn.executemany(sql, rows)
        answer: object = None
        if self.statement is not None:
            cursor = conn.execute(self.statement.sql, self.statement.params)
            try:
                if self.statement.answer == _ONE:
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
            except sqlite3.Error as exc:
                raise StorageError(f"commit failed on {self.path}: {exc}") from None
        return answer


def _rollback_if_open(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
