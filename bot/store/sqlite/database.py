"""The SQLite engine's face: :class:`Database`, one file behind the store's repositories.

Every statement goes through :class:`Database`, which runs it on the connection's
:class:`~bot.store.sqlite.worker.SqliteWorker` thread (one :mod:`trip <bot.store.sqlite.trip>`
per call, however many statements) and keeps an interactive
:class:`~bot.store.sqlite.transaction.Transaction` of one task from swallowing a statement of
another. Opening it sets the connection up (:mod:`bot.store.sqlite.connection`) and applies
the migrations (:mod:`bot.store.sqlite.schema`). Nothing outside ``bot/store`` writes SQL,
and no ``sqlite3`` error leaves it: the worker maps them into
:class:`~bot.errors.StorageError` and its subclasses (:mod:`bot.store.sqlite.errors`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast, overload

import structlog

from bot.errors import StorageError
from bot.private_files import private_file, private_folder
from bot.store.engine import Compaction, settle
from bot.store.sqlite.connection import Prepare, connect
from bot.store.sqlite.memory_search import memory_search
from bot.store.sqlite.schema import Migration, migrations, refuse_newer
from bot.store.sqlite.transaction import Transaction
from bot.store.sqlite.trip import Answer, Statement, Trip, rollback_if_open
from bot.store.sqlite.vacuum import Compact
from bot.store.sqlite.worker import Job, SqliteWorker
from bot.store.statements import Params, Read, Row, Write

log = structlog.get_logger(__name__)

T = TypeVar("T")


class Database:
    """An open SQLite file. Use :meth:`open` and :meth:`aclose` (or ``async with``).

    The engine behind :class:`bot.store.Store`: the repositories hand it their statements
    (:mod:`bot.store.statements`), and it decides how they travel. It satisfies
    :class:`bot.store.engine.Database`, as the PostgreSQL engine does.
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
    async def open(cls, path: str | Path, *, migrate: bool = True, create: bool = True) -> Database:
        """Open (creating it if needed) and migrate the database at ``path``; StorageError
        when it cannot be opened or prepared, or when a newer release migrated it (its
        schema is above this release's last migration). ``migrate=False`` leaves the schema as it is
        (``hatchway doctor`` reports pending migrations; only the daemon applies them).
        ``create=False`` opens an existing file only (the operator's commands): a missing
        one is a StorageError, and neither it nor its folder is made."""
        file = Path(path)
        if create:
            try:
                # the folder 0700 and the file 0600 whatever the umask; SQLite gives its
                # -wal and -shm files the database file's mode
                private_folder(file.parent)
                private_file(file)
            except OSError as exc:
                raise StorageError(f"cannot open database {file}: {exc}") from None
        worker = await SqliteWorker.start(file, lambda: connect(file, create=create))
        db = cls(file, worker)
        try:
            current = await db._submit(Prepare(file))
            known = migrations()
            if migrate:
                refuse_newer(file, current, known[-1][0] if known else 0)
            for number, name, sql in known:
                if migrate and number > current:
                    log.info("db_migration_applying", migration=name)
                    await db._submit(Migration(file, number, sql))
        except BaseException:
            await worker.aclose()
            raise
        return db

    @property
    def description(self) -> str:
        """The database in words: its file."""
        return str(self.path)

    def memory_search(
        self, *, scope_key: str, text: str, limit: int, decode: Callable[[list[Row]], T]
    ) -> Read[T] | None:
        """FTS5 ``MATCH`` ranked by ``bm25`` (:mod:`bot.store.sqlite.memory_search`)."""
        return memory_search(scope_key=scope_key, text=text, limit=limit, decode=decode)

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
            done = self._submit(Trip(path=self.path, begin=True, statement=None, commit=True))
        await settle(done)

    async def compact(self) -> Compaction:
        """Give freed pages back to the file system (:class:`Compact`: the first time on a
        file from before incremental vacuum, a full ``VACUUM`` that rewrites it)."""
        async with self._lock:
            self._check_open()
            done = self._submit(Compact(self.path))
        return await done

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
        statement = None if then is None else Statement(then.sql, then.params, Answer.ALL)
        trip = Trip(path=self.path, begin=True, statement=statement, commit=True, writes=writes)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        rows = await settle(done)
        return None if then is None else then.decode(cast(list[Row], rows))

    async def read(self, query: Read[T]) -> T:
        """Run ``query`` (one trip) and decode its rows."""
        return query.decode(await self.fetchall(query.sql, query.params))

    async def execute(self, sql: str, params: Params = ()) -> None:
        """One statement in its own transaction (one round trip); an insert that needs its
        generated id says ``RETURNING id`` and uses :meth:`execute_returning` instead."""
        await self._alone(Statement(sql, params, Answer.NOTHING))

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns its first row."""
        return cast(Row | None, await self._alone(Statement(sql, params, Answer.ONE)))

    async def execute_returning_all(self, sql: str, params: Params = ()) -> list[Row]:
        """One statement (``… RETURNING …``) in its own transaction, in one round trip;
        returns all its rows."""
        return cast(list[Row], await self._alone(Statement(sql, params, Answer.ALL)))

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._read(Statement(sql, params, Answer.ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._read(Statement(sql, params, Answer.ONE)))

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

    async def _alone(self, statement: Statement) -> object:
        # SQLite's own statement transaction: a writing statement takes the write lock when
        # it starts (waiting up to busy_timeout, like BEGIN IMMEDIATE) and commits when it
        # finishes, all or nothing. One sqlite3 call instead of three on the worker thread,
        # each of which gives up the GIL and may wait a switch interval to get it back.
        trip = Trip(path=self.path, begin=False, statement=statement, commit=False, alone=True)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await settle(done)

    async def _read(self, statement: Statement) -> object:
        trip = Trip(path=self.path, begin=False, statement=statement, commit=False)
        async with self._lock:
            self._check_open()
            done = self._submit(trip)
        return await done

    async def _rollback(self) -> None:
        """Roll back if a transaction is open, decided on the worker thread after every
        statement queued before it has run."""
        await self._submit(rollback_if_open)

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
