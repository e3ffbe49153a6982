"""The SQLite database: one aiosqlite connection, WAL, numbered migrations applied at open.

Every statement goes through :class:`Database`, which serialises access to the single
connection with a lock so that a transaction of one task never swallows a statement of
another. Nothing outside ``bot/store`` writes SQL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Iterable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

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
    """Statements run inside :meth:`Database.transaction`; committed together."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns ``lastrowid``."""
        cursor = await self._conn.execute(sql, params)
        rowid = cursor.lastrowid or 0
        await cursor.close()
        return rowid

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        await self._conn.executemany(sql, rows)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        cursor = await self._conn.execute(sql, params)
        rows = await cursor.fetchall()
        await cursor.close()
        return list(rows)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        cursor = await self._conn.execute(sql, params)
        row = await cursor.fetchone()
        await cursor.close()
        return row


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

        A task cancelled while it waits on ``BEGIN`` or ``COMMIT`` still lets that statement
        settle (and rolls back), so the shared connection never stays inside a transaction.
        """
        async with self._lock:
            self._check_open()
            try:
                await _settle(self._conn.execute("BEGIN IMMEDIATE"))
            except asyncio.CancelledError:
                await _settle(self._rollback())
                raise
            except sqlite3.Error as exc:
                raise StorageError(f"database {self.path} is not writable: {exc}") from None
            tx = Transaction(self._conn)
            try:
                yield tx
            except BaseException:
                await _settle(self._rollback())
                raise
            try:
                await _settle(self._conn.execute("COMMIT"))
            except sqlite3.Error as exc:
                await _settle(self._rollback())
                raise StorageError(f"commit failed on {self.path}: {exc}") from None

    async def _rollback(self) -> None:
        if self._conn.in_transaction:
            await self._conn.execute("ROLLBACK")

    async def execute(self, sql: str, params: Params = ()) -> int:
        """One statement in its own transaction; returns ``lastrowid``."""
        async with self.transaction() as tx:
            return await tx.execute(sql, params)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._lock:
            self._check_open()
            return await Transaction(self._conn).fetchall(sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        async with self._lock:
            self._check_open()
            return await Transaction(self._conn).fetchone(sql, params)

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
