"""The PostgreSQL engine's face: :class:`Database`, a server's database behind the store's
repositories (``[storage] url``).

It satisfies :class:`bot.store.engine.Database` as the SQLite engine does: the repositories
hand it the same statements, written once with ``?`` placeholders
(:mod:`~bot.store.postgres.placeholders` numbers them). What differs is how they travel.
SQLite has one connection on a thread of its own; here a pool of connections
(:mod:`~bot.store.postgres.connection`) lets units run side by side, each on one connection
for its whole length:

* a statement or a read alone is one round trip in autocommit (asyncpg prepares each
  statement text once per connection and keeps it);
* a unit of work is one transaction: ``BEGIN``, each write (``executemany`` when it has
  several rows: one round trip for all of them), the read after them, ``COMMIT``; a unit of
  one write needs no ``BEGIN`` (a statement, and ``executemany``, is atomic by itself);
* an interactive transaction is :class:`~bot.store.postgres.transaction.Transaction`.

A unit once sent is seen to its end even if its caller is cancelled
(:func:`~bot.store.engine.settle`), so its outcome is known and its connection goes back to
the pool clean. Opening it migrates the schema under an advisory lock
(:mod:`~bot.store.postgres.schema`). Only this package imports asyncpg; its errors leave as
the :class:`~bot.errors.StorageError` tree (:mod:`~bot.store.postgres.errors`).

A statement the server does not answer within ``command_timeout_s`` fails as
:class:`~bot.errors.StorageUnavailable`, and its connection is closed rather than handed back
to the pool: it may still be mid-statement, and handing it back would wait for the driver's
cancel request, which a hung server does not answer either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, cast, overload

import asyncpg

from bot.errors import StorageError, StorageUnavailable
from bot.store.engine import Compaction, settle
from bot.store.postgres import schema
from bot.store.postgres.connection import connect_unbounded, create_pool, describe
from bot.store.postgres.errors import mapped, storage_error
from bot.store.postgres.memory_search import memory_search
from bot.store.postgres.placeholders import numbered
from bot.store.postgres.transaction import Transaction
from bot.store.statements import Params, Read, Row, Write

T = TypeVar("T")

MIN_SERVER_VERSION = 13
"""The oldest PostgreSQL major version the migrations are written for."""

CLOSE_TIMEOUT_S = 10.0
"""How long closing waits for connections still in use before it cuts them."""


class _OneLineWhileUnreachable(logging.Filter):
    """asyncpg's pool reopens the connection it keeps at least (every 1, 2, 4 … 60 s while
    the server is down) and logs each failed attempt with a traceback: a server that cannot
    be reached is one line each time, the error in it; any other failure keeps its
    traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and isinstance(storage_error(exc, "pool"), StorageUnavailable):
            record.msg = f"{record.getMessage()} (database unreachable: {exc})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_pool_reconnects() -> None:
    pool_log = logging.getLogger("asyncpg.pool")
    if not any(isinstance(f, _OneLineWhileUnreachable) for f in pool_log.filters):
        pool_log.addFilter(_OneLineWhileUnreachable())


class Database:
    """A PostgreSQL database. Use :meth:`open` and :meth:`aclose` (or ``async with``)."""

    def __init__(self, url: str, pool: asyncpg.Pool, server_version: int) -> None:
        self._description = describe(url)
        self._pool = pool
        self._closed = False
        self.server_version = server_version
        """The server's major version (15 for 15.4)."""
        self.trips = 0
        """Units sent to the server (a statement, a read, a unit of work, each statement of
        an interactive transaction and its end), counted as the SQLite engine counts its
        trips to its thread."""

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        password: str | None = None,
        migrate: bool = True,
        pool_size: int = 10,
        connect_timeout_s: float = 10.0,
        command_timeout_s: float | None = 30.0,
    ) -> Database:
        """Connect to ``url`` (``password`` as the environment gave it; None: the driver's
        own ``PGPASSWORD``/``.pgpass``, or none) and apply pending migrations unless
        ``migrate`` is false (``hatchway doctor`` only reads the schema version), on a
        connection of their own without ``command_timeout_s``. StorageError when it cannot
        (StorageUnavailable when the server cannot be reached or does not answer)."""
        description = describe(url)
        _quiet_pool_reconnects()
        async with mapped(f"cannot open database {description}"):
            pool = await create_pool(
                url,
                password=password,
                size=pool_size,
                connect_timeout_s=connect_timeout_s,
                command_timeout_s=command_timeout_s,
            )
        try:
            async with mapped(f"cannot prepare database {description}"):
                async with pool.acquire() as conn:
                    version = conn.get_server_version().major
                    if version < MIN_SERVER_VERSION:
                        raise StorageError(
                            f"database {description} runs PostgreSQL {version}; hatchway "
                            f"needs {MIN_SERVER_VERSION} or newer"
                        )
                    # a schema as new as this release's is only read: no other connection
                    pending = migrate and await schema.schema_version(conn) != _latest()
                if pending:
                    await _migrate(url, password=password, connect_timeout_s=connect_timeout_s)
        except BaseException:
            pool.terminate()
            raise
        return cls(url, pool, version)

    @property
    def description(self) -> str:
        """The database's URL without credentials."""
        return self._description

    def memory_search(
        self, *, scope_key: str, text: str, limit: int, decode: Callable[[list[Row]], T]
    ) -> Read[T] | None:
        """A ``tsvector`` query ranked by ``ts_rank`` (:mod:`bot.store.postgres.memory_search`)."""
        return memory_search(scope_key=scope_key, text=text, limit=limit, decode=decode)

    async def schema_version(self) -> int:
        return await self._unit(schema.schema_version, "cannot read the schema of")

    async def integrity_check(self) -> str:
        """``"ok"`` once the server answers: PostgreSQL checks its own pages and keeps its
        constraints (a deeper check is the ``amcheck`` extension's, outside hatchway)."""
        answer = await self._unit(lambda conn: conn.fetchval("SELECT 'ok'"), "cannot read")
        return str(answer)

    async def check_writable(self) -> None:
        """Return when the server accepts writes (one round trip; nothing is written):
        StorageUnavailable when it cannot be reached, StorageError when it is read-only (a
        standby, or ``default_transaction_read_only``)."""
        row = await self._unit(
            lambda conn: conn.fetchrow(
                "SELECT pg_is_in_recovery() AS standby,"
                " current_setting('transaction_read_only') AS read_only"
            ),
            "cannot reach",
        )
        if row is not None and (row["standby"] or row["read_only"] == "on"):
            raise StorageError(
                f"database {self._description} is not writable: the server is read-only "
                "(a standby, or default_transaction_read_only is on)"
            )

    async def compact(self) -> Compaction:
        """Nothing to do: PostgreSQL's autovacuum reuses what deletions free."""
        self._check_open()
        return Compaction(switched=False, vacuum_s=0.0, pages_freed=0, file_pages=0)

    def transaction(self) -> Transaction:
        """An interactive write transaction: ``async with db.transaction() as tx`` (see
        :class:`~bot.store.postgres.transaction.Transaction`)."""
        return Transaction(self)

    @overload
    async def commit(self, writes: Sequence[Write]) -> None: ...

    @overload
    async def commit(self, writes: Sequence[Write], then: Read[T]) -> T: ...

    async def commit(self, writes: Sequence[Write], then: Read[T] | None = None) -> T | None:
        """Run ``writes`` in order in one transaction, then the query ``then`` (which sees
        them), and commit, on one connection. Nothing is written if any of it fails. No
        writes: ``then`` runs as a plain read; nothing at all: nothing is sent."""
        if not writes:
            if then is None:
                return None
            return await self.read(then)

        async def unit(conn: asyncpg.Connection) -> list[Row] | None:
            if then is None and len(writes) == 1:
                await _write(conn, writes[0])
                return None
            async with conn.transaction():
                for write in writes:
                    await _write(conn, write)
                if then is None:
                    return None
                return cast(list[Row], await conn.fetch(numbered(then.sql), *then.params))

        rows = await self._unit(unit, "cannot write")
        return None if then is None else then.decode(cast(list[Row], rows))

    async def read(self, query: Read[T]) -> T:
        """Run ``query`` (one round trip) and decode its rows."""
        return query.decode(await self.fetchall(query.sql, query.params))

    async def execute(self, sql: str, params: Params = ()) -> None:
        """One statement in its own transaction (autocommit: one round trip)."""
        await self._unit(lambda conn: conn.execute(numbered(sql), *params), "cannot write")

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None:
        """One statement (``… RETURNING …``) in its own transaction; its first row."""
        return cast(
            Row | None,
            await self._unit(lambda conn: conn.fetchrow(numbered(sql), *params), "cannot write"),
        )

    async def execute_returning_all(self, sql: str, params: Params = ()) -> list[Row]:
        """One statement (``… RETURNING …``) in its own transaction; all its rows."""
        return cast(
            list[Row],
            await self._unit(lambda conn: conn.fetch(numbered(sql), *params), "cannot write"),
        )

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(
            list[Row],
            await self._unit(lambda conn: conn.fetch(numbered(sql), *params), "cannot read"),
        )

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(
            Row | None,
            await self._unit(lambda conn: conn.fetchrow(numbered(sql), *params), "cannot read"),
        )

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.wait_for(self._pool.close(), CLOSE_TIMEOUT_S)
        except (TimeoutError, asyncpg.InterfaceError, OSError):
            self._pool.terminate()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------------

    async def _unit(self, work: Callable[[asyncpg.Connection], Awaitable[T]], doing: str) -> T:
        """Run ``work`` on a connection of the pool, to its end even if the caller is
        cancelled meanwhile; the server's errors mapped (``doing``: "cannot write")."""
        self._check_open()
        self.trips += 1
        return await settle(self._on_connection(work, f"{doing} database {self._description}"))

    async def _on_connection(
        self, work: Callable[[asyncpg.Connection], Awaitable[T]], context: str
    ) -> T:
        async with mapped(context), self._pool.acquire() as conn:
            try:
                return await work(conn)
            except (TimeoutError, asyncpg.exceptions.InternalClientError):
                # no answer within command_timeout_s, or a state the driver lost track
                # of: closed, not handed back (module docstring)
                conn.terminate()
                raise

    async def _acquire(self) -> asyncpg.Connection:
        async with mapped(f"cannot reach database {self._description}"):
            conn: asyncpg.Connection = await self._pool.acquire()
        return conn

    async def _release(self, conn: asyncpg.Connection) -> None:
        try:
            await self._pool.release(conn)
        except (asyncpg.InterfaceError, asyncpg.PostgresError, OSError):
            conn.terminate()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"database {self._description} is closed")


def _latest() -> int:
    known = schema.migrations()
    return known[-1][0] if known else 0


async def _migrate(url: str, *, password: str | None, connect_timeout_s: float) -> None:
    """Apply the pending migrations on a connection without the statement timeout."""
    conn = await connect_unbounded(url, password=password, connect_timeout_s=connect_timeout_s)
    try:
        await schema.migrate(conn)
    finally:
        try:
            await conn.close(timeout=connect_timeout_s)
        except (asyncpg.InterfaceError, asyncpg.PostgresError, OSError):
            conn.terminate()


async def _write(conn: asyncpg.Connection, write: Write) -> None:
    rows = write.rows
    if not rows:
        return
    if len(rows) == 1:
        await conn.execute(numbered(write.sql), *rows[0])
    else:
        await conn.executemany(numbered(write.sql), rows)
