"""The interactive write transaction: ``async with db.transaction() as tx``, for the few
repositories whose writes depend on what they read (an approval's decision with its audit
row and grant). Everything else commits a :class:`~bot.store.unit_of_work.UnitOfWork`.

A :class:`Transaction` is its :class:`~bot.store.sqlite.Database`'s partner: it holds the
database's lock for as long as it is open and sends its statements as trips of its own
(:mod:`bot.store.sqlite.trip`).
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, cast

from bot.errors import StorageError
from bot.store.engine import settle
from bot.store.sqlite.trip import Answer, Statement, Trip
from bot.store.statements import Params, Row

if TYPE_CHECKING:
    from bot.store.sqlite.database import Database


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
                    await settle(self._db._rollback())
                return
            if not self._committed:
                committed = self._db._submit(self._take(None, commit=True))
                self._unlock()
                await settle(committed)
        finally:
            self._unlock()

    async def execute(self, sql: str, params: Params = ()) -> None:
        """Run one statement (an insert that needs its generated id says ``RETURNING id``
        and uses :meth:`fetchone`)."""
        await self._trip(Statement(sql, params, Answer.NOTHING))

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], await self._trip(Statement(sql, params, Answer.ALL)))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, await self._trip(Statement(sql, params, Answer.ONE)))

    def _check_open(self) -> None:
        if self._committed or not self._locked:
            raise StorageError("the transaction is not open")

    def _take(self, statement: Statement | None, *, commit: bool) -> Trip:
        self._check_open()
        trip = Trip(path=self._db.path, begin=self._begin, statement=statement, commit=commit)
        self._begin = False
        self._committed = commit
        return trip

    async def _trip(self, statement: Statement) -> object:
        return await self._db._submit(self._take(statement, commit=False))

    def _unlock(self) -> None:
        if self._locked:
            self._locked = False
            self._db._lock.release()
