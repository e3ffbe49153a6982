"""The interactive write transaction on PostgreSQL: ``async with db.transaction() as tx``.

SQLite runs these with ``BEGIN IMMEDIATE``: one writer at a time, so what a transaction
reads still holds when its writes commit (an approval read as pending is still pending when
it is decided). PostgreSQL lets writers run side by side, so the engine gives the same
guarantee in two parts: interactive transactions queue on one advisory lock,
:data:`TRANSACTION_LOCK` (taken before ``BEGIN``, so each one's snapshot is taken after the
previous one committed), and run at ``REPEATABLE READ``, so a row a single statement changed
meanwhile makes the transaction fail as :class:`~bot.errors.StorageBusy` (SQLSTATE 40001)
instead of deciding on a stale read. The lock is waited on for at most the connection's
``lock_timeout`` (busy, as SQLite's busy timeout).

The transaction holds one connection of the pool from its start to its end. Any failure on
the way (a statement, the commit, a cancellation) closes that connection rather than hand
it back: the server then rolls back and drops the lock, whatever state the connection was
left in.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

import asyncpg

from bot.errors import StorageError
from bot.store.engine import settle
from bot.store.postgres.errors import mapped
from bot.store.postgres.placeholders import numbered
from bot.store.statements import Params, Row

if TYPE_CHECKING:
    from bot.store.postgres.database import Database

TRANSACTION_LOCK = int.from_bytes(b"hatchtxn", "big")
"""The advisory lock key interactive transactions queue on (session level, per database)."""

_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"
_LOCK = f"SELECT pg_advisory_lock({TRANSACTION_LOCK})"
_COMMIT = f"COMMIT; SELECT pg_advisory_unlock({TRANSACTION_LOCK})"
_ROLLBACK = f"ROLLBACK; SELECT pg_advisory_unlock({TRANSACTION_LOCK})"


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
                await conn.execute(_LOCK)
                await conn.execute(_BEGIN)
        except BaseException:
            await self._discard()
            raise

    async def _statement(self, run: Any) -> Any:
        conn = self._conn
        if conn is None or self._done:
            raise StorageError("the transaction is not open")
        self._db.trips += 1
        async with mapped(f"database {self._db.description}"):
            return await settle(run(conn))

    async def _end(self, *, commit: bool) -> None:
        conn = self._conn
        if conn is None or self._done:
            return
        self._done = True
        try:
            async with mapped(f"database {self._db.description} could not commit"):
                await conn.execute(_COMMIT if commit else _ROLLBACK)
        except BaseException:
            await self._discard()
            raise
        self._conn = None
        await self._db._release(conn)

    async def _discard(self) -> None:
        """Close the connection (the server rolls back and unlocks) and give its place in
        the pool back."""
        conn, self._conn, self._done = self._conn, None, True
        if conn is not None:
            conn.terminate()
            await self._db._release(conn)
