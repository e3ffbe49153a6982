"""One round trip to the database thread: what it runs there, and how the loop waits for it.

A :class:`Trip` is a job for :class:`~bot.store.sqlite.worker.SqliteWorker`: ``BEGIN
IMMEDIATE`` if due, the writes of a unit of work, one statement whose answer comes back,
``COMMIT`` if due — however many statements, one trip, which costs the event loop far more
than SQLite's work does. This is how a :class:`~bot.store.unit_of_work.UnitOfWork` travels
on SQLite. :func:`~bot.store.engine.settle` is the loop's side: a trip once queued is
awaited to its end even when the caller is cancelled, so the shared connection never stays
inside a transaction.
"""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bot.store.sqlite.errors import NOT_WRITABLE, EngineError, result_code, storage_error
from bot.store.statements import Params, Write

T = TypeVar("T")


class Answer(enum.Enum):
    """What a trip's statement returns."""

    NOTHING = (
        "nothing"  # a write whose rows are not read (an insert wanting its id says RETURNING id)
    )
    ONE = "one"  # the first row, or None
    ALL = "all"  # every row


@dataclass(frozen=True, slots=True)
class Statement:
    sql: str
    params: Params
    answer: Answer


@dataclass(frozen=True, slots=True, kw_only=True)
class Trip:
    """What one round trip to the worker thread runs, in order: ``BEGIN IMMEDIATE`` (if
    due), the ``writes``, one statement whose answer is returned, ``COMMIT`` (if due).

    ``alone``: the statement is its own transaction (no ``BEGIN``/``COMMIT``; SQLite
    commits it when it finishes); a database that cannot be written then raises
    :class:`~bot.errors.StorageError` saying so, as a failing ``BEGIN IMMEDIATE`` or
    ``COMMIT`` does."""

    path: Path
    begin: bool
    statement: Statement | None
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
                raise storage_error(
                    exc, f"database {self.path} is not writable", path=self.path
                ) from exc
        if not self.commit:
            return self._run(conn)
        try:
            return self._run(conn)
        except BaseException:
            # nothing queued after a commit may find the connection inside this transaction
            rollback_if_open(conn)
            raise

    def _run(self, conn: sqlite3.Connection) -> object:
        if self.begin:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except EngineError as exc:
                raise storage_error(
                    exc, f"database {self.path} is not writable", path=self.path
                ) from exc
        for write in self.writes:
            conn.executemany(write.sql, write.rows)
        answer: object = None
        if self.statement is not None:
            cursor = conn.execute(self.statement.sql, self.statement.params)
            try:
                if self.statement.answer is Answer.ONE and self.alone:
                    # stepped to the end: the statement (and so its transaction) is finished
                    rows = cursor.fetchall()
                    answer = rows[0] if rows else None
                elif self.statement.answer is Answer.ONE:
                    answer = cursor.fetchone()
                elif self.statement.answer is Answer.ALL:
                    answer = cursor.fetchall()
            finally:
                cursor.close()
        if self.commit:
            try:
                conn.execute("COMMIT")
            except EngineError as exc:
                raise storage_error(
                    exc, f"database {self.path} could not commit", path=self.path
                ) from exc
        return answer


def rollback_if_open(conn: sqlite3.Connection) -> None:
    """Roll back the connection's transaction, if one is open (a job of its own, too)."""
    if conn.in_transaction:
        conn.execute("ROLLBACK")
