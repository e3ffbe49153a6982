"""The interactive write transaction on PostgreSQL: ``async with db.transaction() as tx``.

SQLite runs these with ``BEGIN IMMEDIATE``: one writer at a time, so two of them never
interleave (two clicks deciding one approval: the second reads what the first wrote).
PostgreSQL lets writers run side by side, so interactive transactions queue on one advisory
lock, :data:`TRANSACTION_LOCK` (``pg_advisory_xact_lock``, taken with ``BEGIN`` in one round
trip and let go by the commit or rollback). They run at ``READ COMMITTED``, where each
statement sees what committed before it: the one taken after another's commit reads that
commit. A single statement of another connection may still change a row between a read and
a write of the transaction; the repositories' writes say what they expect
(``UPDATE … WHERE status = 'pending' RETURNING id``), so such a write finds nothing to do and
the repository answers accordingly, as the conditional statements outside transactions do.
The lock is waited on for at most the connection's ``lock_timeout`` (busy, as SQLite's busy
timeout).

The transaction holds one connection of the pool from its start to its end. Any failure on
the way (a statement, the commit, a cancellation) closes that connection rather than hand
it back: the server then rolls back and lets the lock go, whatever state the connection was
left in.
"""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import TYPE_CHECKING, Any

import asyncpg

from bot.errors import StorageError, StorageUnavailable
from bot.store.engine import settle
from bot.store.postgres.errors import mapped
from bot.store.postgres.placeholders import numbered
from bot.store.statements import Params, Row

if TYPE_CHECKING:
    from bot.store.postgres.database import Database

TRANSACTION_LOCK = int.from_bytes(b"hatchtxn", "big")
"""The advisory lock key interactive transactions queue on (transaction level, per
database)."""

_BEGIN = f"BEGIN; SELECT pg_advisory_xact_lock({TRANSACTION_LOCK})"


class Transaction:
    """An interactive write transaction (see the module docstring): its statements commit
    together when the block ends, or roll back if it raises."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._conn: asyncpg.Connection | None = None
        self._done = False

    async def __aenter__(self) -> Transaction:
        self._db._check_open()
        await settle(self._begin())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._db.trips += 1
        await settle(self._end(commit=exc_type is None))

    async def execute(self, sql: str, params: Params = ()) -> None:
        """Run one statement (an insert that needs its generated id says ``RETURNING id``
        and uses :meth:`fetchone`)."""
        await self._statement(lambda conn: conn.execute(numbered(sql), *params))

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        rows: list[Row] = await self._statement(lambda conn: conn.fetch(numbered(sql), *params))
        return rows

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        row: Row | None = await self._statement(lambda conn: conn.fetchrow(numbered(sql), *params))
        return row

    # -- internals ------------------------------------------------------------------------

    async def _begin(self) -> None:
        conn = await self._db._acquire()
        self._conn = conn
        try:
            async with mapped(f"database {self._db.description} is not writable"):
                await conn.execute(_BEGIN)
        except BaseException:
            await self._discard()
            raise

    async def _statement(self, run: Any) -> Any:
        conn = self._conn
        if conn is None or self._done:
            raise StorageError("the transaction is not open")
        self._db.trips += 1
        try:
            async with mapped(f"database {self._db.description}"):
                return await settle(run(conn))
        except StorageUnavailable:
            # lost, or no answer in time: nothing more can be sent on it (a rollback would
            # wait for the same server)
            await self._discard()
            raise

    async def _end(self, *, commit: bool) -> None:
        conn = self._conn
        if conn is None or self._done:
            return
        self._done = True
        try:
            async with mapped(f"database {self._db.description} could not commit"):
                await conn.execute("COMMIT" if commit else "ROLLBACK")
        except BaseException:
            await self._discard()
            raise
        self._conn = None
        await self._db._release(conn)

    async def _discard(self) -> None:
        """Close the connection (the server rolls back and lets the lock go) and give its
        place in the pool back."""
        conn, self._conn, self._done = self._conn, None, True
        if conn is not None:
            # a connection the server ended (its idle-in-transaction timeout, a restart) was
            # handed back by the pool as it closed: its proxy answers nothing any more
            with contextlib.suppress(asyncpg.InterfaceError):
                conn.terminate()
            await self._db._release(conn)
