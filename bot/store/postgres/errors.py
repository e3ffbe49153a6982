"""PostgreSQL's errors mapped into the project's tree, as :mod:`bot.store.sqlite.errors`
maps SQLite's.

Every error asyncpg raises passes through :func:`storage_error` before it leaves the engine,
so nothing outside ``bot/store/postgres`` catches (or imports) asyncpg. The SQLSTATE decides:

==================================================  ======================================
asyncpg error                                       raised as
==================================================  ======================================
40001 serialization failure, 40P01 deadlock,        :class:`~bot.errors.StorageBusy`
55P03 lock not available (``lock_timeout``),
53300 too many connections, a prepared statement
a migration outdated
class 23 (unique, foreign key, check; a trigger's   :class:`~bot.errors.StorageIntegrityError`
refusal is raised as 23000 by the migrations)
class 08 (connection), 57P01–57P03 (shutdown,       :class:`~bot.errors.StorageUnavailable`
starting up), a closed or lost connection or
pool, a refused or timed-out connect or
statement, a connection whose state the driver
lost (``InternalClientError``)
anything else (bad SQL, permissions, read-only)     :class:`~bot.errors.StorageError`
==================================================  ======================================
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg

from bot.errors import StorageBusy, StorageError, StorageIntegrityError, StorageUnavailable

_BUSY = frozenset({"40001", "40P01", "55P03", "53300"})
_UNAVAILABLE = frozenset({"57P01", "57P02", "57P03"})

_STALE_STATEMENT = (
    asyncpg.exceptions.InvalidCachedStatementError,
    asyncpg.exceptions.OutdatedSchemaCacheError,
)
"""A prepared statement a migration (of another replica, a newer version) outdated: the
driver drops it, so the same statement passes when tried again."""

EngineError = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    OSError,
    asyncio.TimeoutError,
)
"""What talking to the server raises: the server's errors, the driver's own (a closed
connection, a closing pool), the socket's, a connect that timed out."""


def sqlstate(exc: BaseException) -> str | None:
    """The SQLSTATE of a server error; None for errors of the driver or the socket."""
    code = getattr(exc, "sqlstate", None)
    return code if isinstance(code, str) else None


def storage_error(exc: BaseException, context: str) -> StorageError:
    """The project's error for ``exc``; its message is ``context`` (which names the database
    without its credentials), then the server's words."""
    words = str(exc) or type(exc).__name__
    message = f"{context}: {words}"
    code = sqlstate(exc)
    if isinstance(exc, _STALE_STATEMENT):
        return StorageBusy(message)
    if code is None:
        if isinstance(exc, OSError | asyncio.TimeoutError) or _connection_gone(exc):
            return StorageUnavailable(message)
        return StorageError(message)
    if code in _BUSY:
        return StorageBusy(message)
    if code.startswith("23"):
        return StorageIntegrityError(message)
    if code.startswith("08") or code in _UNAVAILABLE:
        return StorageUnavailable(message)
    return StorageError(message)


def _connection_gone(exc: BaseException) -> bool:
    """Whether a driver error says the connection (or the pool) is closed, rather than that
    it was misused."""
    if isinstance(exc, asyncpg.exceptions.ClientCannotConnectError):
        return True
    if isinstance(exc, asyncpg.exceptions.InternalClientError):
        # the driver lost track of the connection's state (a server that went away in the
        # middle of a statement): the connection is unusable, as one closed
        return True
    return isinstance(exc, asyncpg.InterfaceError) and any(
        word in str(exc) for word in ("closed", "closing", "connection lost")
    )


@contextlib.asynccontextmanager
async def mapped(context: str) -> AsyncIterator[None]:
    """Raise what the block raises from asyncpg (or its socket) as :func:`storage_error`;
    anything else passes unchanged."""
    try:
        yield
    except EngineError as exc:
        raise storage_error(exc, context) from exc
