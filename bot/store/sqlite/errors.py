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

The message names the real cause: an I/O error says which one (SQLite's extended code, e.g.
``SQLITE_IOERR_SHMSIZE``), and, given the database's path, that its file system has no space
left when that is so (SQLite says "disk I/O error" when the ``-shm`` file cannot grow).
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

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


#: Below this many bytes free, a file system counts as full (SQLite needs a few pages).
NEARLY_FULL_BYTES = 1 << 20


def _cause(exc: sqlite3.Error | sqlite3.Warning, path: Path | None) -> str:
    """The engine's words, with what they leave out: which I/O error, and a full disk."""
    words = str(exc)
    code = result_code(exc)
    if code == sqlite3.SQLITE_IOERR:
        name = getattr(exc, "sqlite_errorname", None)
        if isinstance(name, str) and name != "SQLITE_IOERR":
            words = f"{words} ({name})"
    if code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN) and path is not None:
        try:
            free = shutil.disk_usage(path.parent).free
        except OSError:
            return words
        if free < NEARLY_FULL_BYTES:
            words = f"{words}: the disk is full ({free} bytes free in {path.parent})"
    return words


def storage_error(
    exc: sqlite3.Error | sqlite3.Warning, context: str, *, path: Path | None = None
) -> StorageError:
    """The project's error for ``exc``; its message is ``context`` (which names the database:
    ``"database /path is not writable"``), then the engine's words (and, given the database's
    ``path``, a full disk behind an I/O error)."""
    message = f"{context}: {_cause(exc, path)}"
    if result_code(exc) in _BUSY:
        return StorageBusy(message)
    if isinstance(exc, sqlite3.IntegrityError):
        return StorageIntegrityError(message)
    return StorageError(message)


@contextlib.contextmanager
def mapped(context: str, *, path: Path | None = None) -> Iterator[None]:
    """Raise what the block raises from ``sqlite3`` as :func:`storage_error` (``context``
    names the database and what was being done); anything else passes unchanged."""
    try:
        yield
    except EngineError as exc:
        raise storage_error(exc, context, path=path) from exc
