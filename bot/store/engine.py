"""The seam between the repositories and an engine: what both engines offer.

The repositories (``inbox.py``, ``history.py``, …) are typed against :class:`Database` and
:class:`Transaction` here, never against one engine; :mod:`bot.store.sqlite` (a file, one
thread) and :mod:`bot.store.postgres` (a server, a pool of connections) both satisfy them.
What differs between the two stays in their packages (see the Storage section of
``docs/architecture.md``); what the store needs of both is written down once, here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, TypeVar, overload

from bot.store.statements import Params, Read, Row, Write

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """What one compaction did: whether it switched the file to incremental mode (SQLite: a
    full ``VACUUM``, and how long that took), and the pages given back. PostgreSQL's own
    autovacuum keeps its tables; its compaction does nothing and says so (all zero)."""

    switched: bool
    vacuum_s: float
    pages_freed: int
    file_pages: int


class Transaction(Protocol):
    """An interactive write transaction (``async with db.transaction() as tx``): its
    statements commit together when the block ends, or roll back if it raises. Two such
    transactions never interleave (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: an advisory
    lock they share). On PostgreSQL a single statement of another connection may still
    change a row between a read and a write, so a write that depends on what was read says
    so in its ``WHERE`` (and ``RETURNING``), as the conditional statements outside
    transactions do."""

    async def __aenter__(self) -> Transaction: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def execute(self, sql: str, params: Params = ()) -> None: ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None: ...


class Database(Protocol):
    """An open database: the engine behind :class:`bot.store.Store`.

    ``trips`` counts what reached the engine as one unit (a statement, a read, a unit of
    work, each statement of an interactive transaction): what ``bench/throughput.py``
    reports per turn and tests of batching count, alike on both engines.
    """

    trips: int

    @property
    def description(self) -> str:
        """The database in words for messages and logs (a path, or a URL without its
        credentials)."""
        ...

    def transaction(self) -> Transaction: ...

    @overload
    async def commit(self, writes: Sequence[Write]) -> None: ...

    @overload
    async def commit(self, writes: Sequence[Write], then: Read[T]) -> T: ...

    async def commit(self, writes: Sequence[Write], then: Read[T] | None = None) -> T | None:
        """Run ``writes`` in order in one transaction, then ``then`` (which sees them), and
        commit; nothing is written if any of it fails."""
        ...

    async def read(self, query: Read[T]) -> T: ...

    async def execute(self, sql: str, params: Params = ()) -> None: ...

    async def execute_returning(self, sql: str, params: Params = ()) -> Row | None: ...

    async def execute_returning_all(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None: ...

    def memory_search(
        self, *, scope_key: str, text: str, limit: int, decode: Callable[[list[Row]], T]
    ) -> Read[T] | None:
        """The engine's own full-text query for the ``memory`` rows of ``scope_key``
        matching ``text`` (best first, ties newest), at most ``limit``; None when ``text``
        has no word to match."""
        ...

    async def schema_version(self) -> int: ...

    async def integrity_check(self) -> str: ...

    async def check_writable(self) -> None: ...

    async def compact(self) -> Compaction: ...

    async def aclose(self) -> None: ...


async def settle(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to completion even if the caller is cancelled meanwhile; the
    cancellation is re-raised once it has settled (a commit once sent is seen to its end,
    so its outcome is known and its connection is free again)."""
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
