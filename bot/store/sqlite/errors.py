"""SQLite's errors mapped into the project's tree, the way httpx maps httpcore's.

Every ``sqlite3`` error raised on the worker thread passes through :func:`storage_error`
before it reaches a caller, so nothing outside the engine (``bot/store/sqlite``) catches (or
imports) ``sqlite3``:

===============================================  =================================
``sqlite3`` error                                raised as
===============================================  =================================
result code BUSY or LOCKED (another connection)  :class:`~bot.errors.StorageBusy`
``IntegrityError`` (constraint, trigger RAISE)   :class:`~bot.errors.StorageIntegrityError`
anything else (read-only, full, I/O, bad SQL)    :class:`~bot.errors.StorageError`
===============================================  =================================
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from bot.errors import StorageBusy, StorageError, StorageIntegrityError

# primary result codes of a database another connection holds (extended codes keep them in
# their low byte): the write may succeed a moment later
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})

# primary result codes of a database that cannot take a write now (locked by another
# process, read-only, out of space, I/O failure); anything else is the statement's own error
NOT_WRITABLE = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
    }
)

EngineError = (sqlite3.Error, sqlite3.Warning)
"""What the ``sqlite3`` module raises (``Warning``: e.g. two statements in one call)."""


def result_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of ``exc``; None for errors Python raised itself."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def storage_error(exc: sqlite3.Error | sqlite3.Warning, context: str) -> StorageError:
    """The project's error for ``exc``; its message is ``context`` (which names the database:
    ``"database /path is not writable"``), then the engine's words."""
    message = f"{context}: {exc}"
    if result_code(exc) in _BUSY:
        return StorageBusy(message)
    if isinstance(exc, sqlite3.IntegrityError):
        return StorageIntegrityError(message)
    return StorageError(message)


@contextlib.contextmanager
def mapped(context: str) -> Iterator[None]:
    """Raise what the block raises from ``sqlite3`` as :func:`storage_error` (``context``
    names the database and what was being done); anything else passes unchanged."""
    try:
        yield
    except EngineError as exc:
        raise storage_error(exc, context) from exc
