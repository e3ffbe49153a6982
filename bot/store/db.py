"""The SQLite database: one aiosqlite connection, WAL, numbered migrations applied at open.

Every statement goes through :class:`Database`, which serialises access to the single
connection with a lock so that a transaction of one task never swallows a statement of
another. Nothing outside ``bot/store`` writes SQL.
"""

from __future__ import annotations

import asyncio
import functools
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import TracebackType
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
    """A serialised write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``): use
    ``async with db.transaction() as tx``; its statements commit together when the block
    ends, or roll back if it raises.

    Every statement runs on aiosqlite's one worker thread, and each trip there and back costs
    the event loop far more than a small SQLite statement does. So a transaction travels in
    as few trips as its results allow: ``executemany`` (which returns nothing) is queued and
    sent with the next statement that returns something, or with the ``COMMIT``; ``BEGIN``
    is sent with the first of them. A transaction that only writes is one trip; its
    statements still run in order, inside the transaction, before the commit. A query
    marked ``last`` takes the ``COMMIT`` along, so a transaction that writes and then reads
    is one trip too.

    The database's lock keeps every other statement off the connection until the commit is
    queued. The worker thread runs its queue in order, so the lock is released as soon as
    the commit is queued, not once it is done: the next transaction's statements queue up
    behind it instead of waiting for the event loop to hear back. A commit that fails rolls
    back on the worker thread before anything queued after it runs, and a task cancelled
    while it waits on the commit still lets it settle, so the shared connection never stays
    inside a transaction.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._begin = True
        self._pending: list[tuple[str, list[Params]]] = []
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
        """Run one statement; returns ``lastrowid``."""
        return cast(int | None, await self._trip(_Statement(sql, params, _LASTROWID))) or 0

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Queue a statement for every row; it runs before the next statement or the commit
        (an error in it is raised there)."""
        self._check_open()
        self._pending.append((sql, list(rows)))

    async def fetchall(self, sql: str, params: Params = (), *, last: bool = False) -> list[Row]:
        """Run the queued statements, then this query; its rows. ``last``: the query is the
        transaction's final statement and the ``COMMIT`` travels with it, in the same trip
        (the rows are returned once committed); the transaction takes nothing after it."""
        return cast(list[Row], await self._trip(_Statement(sql, params, _ALL), commit=last))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._trip(_Statement(sql, params, _ONE)))

    def _check_open(self) -> None:
        if self._committed or not self._locked:
            raise StorageError("the transaction is not open")

    def _take(self, statement: _Statement | None, *, commit: bool) -> _Trip:
        self._check_open()
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
        done = self._db._submit(self._take(statement, commit=commit))
        if not commit:
            return await done
        self._unlock()  # the commit is queued: what is queued next runs after it
        return await _settle(done)

    def _unlock(self) -> None:
        if self._locked:
            self._locked = False
            self._db._lock.release()


class Database:
    """An open SQLite file. Use :meth:`open` and :meth:`aclose` (or ``async with``)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection, sqlite: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn
        self._sqlite = sqlite  # the connection behind ``conn``; used on its worker thread only
        self._lock = asyncio.Lock()
        self._closed = False
        self.trips = 0
        """Round trips to the worker thread since the database was opened (what
        ``bench/throughput.py`` reports per turn, and what tests of batching count)."""

    @classmethod
    async def open(cls, path: str | Path) -> Database:
        file = Path(path)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(str(file), isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open database {file}: {exc}") from None
        conn.row_factory = sqlite3.Row
        try:
            async with conn.cursor() as cursor:
                db = cls(file, conn, cursor.connection)
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

    def transaction(self) -> Transaction:
        """A serialised write transaction: ``async with db.transaction() as tx`` (see
        :class:`Transaction`)."""
        return Transaction(self)

    async def _rollback(self) -> None:
        """Roll back if a transaction is open, decided on the worker thread after every
        statement queued before it has run."""
        await self._submit(_rollback_if_open)

    def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> asyncio.Future[T]:
        """Queue ``fn`` to run with the connection on aiosqlite's worker thread (one round
        trip, however many statements ``fn`` runs); the future tells when it has run.
        Queuing without awaiting is what lets a commit be queued under the lock and awaited
        outside it."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        # The one use of aiosqlite internals: nothing public queues a function on the worker
        # thread. Its public methods each run one sqlite3 call, and queue it only once the
        # caller awaits them. ``_tx`` is the queue they all feed (via ``_execute``); the
        # thread runs its ``(future, function)`` items in order (so since aiosqlite 0.20).
        self._conn._tx.put_nowait((future, functools.partial(fn, self._sqlite)))
        self.trips += 1
        return future

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement in its own transaction (one round trip); returns ``lastrowid``."""
        return cast(int | None, await self._alone(_Statement(sql, params, _LASTROWID))) or 0

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns its first row."""
        return cast(Row | None, await self._alone(_Statement(sql, params, _ONE)))

    async def _alone(self, statement: _Statement) -> object:
        # SQLite's own statement transaction: a writing statement takes the write lock when
        # it starts (waiting up to busy_timeout, like BEGIN IMMEDIATE) and commits when it
        # finishes, all or nothing. One sqlite3 call instead of three on the worker thread,
        # each of which gives up the GIL and may wait a switch interval to get it back.
        trip = _Trip(
            path=self.path, begin=False, pending=[], statement=statement, commit=False, alone=True
        )
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
    returned, ``COMMIT``. Runs on the worker thread.

    ``alone``: the statement is its own transaction (no ``BEGIN``/``COMMIT``; SQLite
    commits it when it finishes); a database that cannot be written then raises
    :class:`StorageError`, as a failing ``BEGIN IMMEDIATE`` or ``COMMIT`` does."""

    path: Path
    begin: bool
    pending: list[tuple[str, list[Params]]]
    statement: _Statement | None
    commit: bool
    alone: bool = False

    def __call__(self, conn: sqlite3.Connection) -> object:
        if self.alone:
            try:
                return self._run(conn)
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF not in _NOT_WRITABLE:
                    raise
                raise StorageError(
                    f"database {self.path} is not writable: {exc}", busy=busy_error(exc)
                ) from None
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
                raise StorageError(
                    f"database {self.path} is not writable: {exc}", busy=busy_error(exc)
                ) from None
        for sql, rows in self.pending:
            conn.executemany(sql, rows)
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
            except sqlite3.Error as exc:
                raise StorageError(
                    f"commit failed on {self.path}: {exc}", busy=busy_error(exc)
                ) from None
        return answer


# primary result codes of a database that cannot take a write now (locked by another
# process, read-only, out of space, I/O failure); anything else is the statement's own error
_NOT_WRITABLE = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
    }
)


# primary result codes of a database another connection holds (extended codes keep them in
# their low byte): the write may succeed a moment later
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})


def busy_error(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the database (it may pass)."""
    code = getattr(exc, "sqlite_errorcode", None)  # None for errors raised by Python itself
    return isinstance(code, int) and code & 0xFF in _BUSY


def _rollback_if_open(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
