"""The thread that owns the SQLite connection, and the queue of jobs it runs.

``sqlite3`` calls block, so they run on one thread of ours: it opens the connection, is the
only thread that ever uses it, and runs the jobs put on its queue one at a time, in the order
they were put. A job is any function of the connection, so a whole transaction (``BEGIN``,
its statements, ``COMMIT``) can be one job: one round trip between the event loop and the
thread, which costs the loop far more than a small statement costs SQLite.

Errors of the ``sqlite3`` module raised by a job are mapped on the thread
(:func:`bot.store.sqlite.errors.storage_error`): a job's future only ever fails with a
:class:`~bot.errors.StorageError` or an error that is not SQLite's.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from bot.errors import StorageError
from bot.store.sqlite.errors import EngineError, storage_error

T = TypeVar("T")

Job = Callable[[sqlite3.Connection], T]
"""A function the worker thread runs with the connection."""

_Item = tuple[asyncio.Future[Any], Job[Any]]


class SqliteWorker:
    """One ``sqlite3`` connection and the thread that owns it.

    :meth:`start` opens the connection on the thread; :meth:`submit` queues a job and
    returns a future without waiting; :meth:`aclose` closes the connection after every job
    queued before it and ends the thread. The queue is FIFO, so what is submitted later
    runs later: a caller may queue a commit and let the next caller queue behind it
    without waiting for the commit to be done.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        self._thread: threading.Thread | None = None

    @classmethod
    async def start(cls, path: Path, connect: Callable[[], sqlite3.Connection]) -> SqliteWorker:
        """Start the thread and open the connection on it with ``connect``; StorageError
        when that fails (the thread has then ended)."""
        worker = cls(path)
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        worker._thread = threading.Thread(
            target=worker._serve, args=(connect, opened), name=f"sqlite {path.name}", daemon=True
        )
        worker._thread.start()
        await opened
        return worker

    def submit(self, job: Job[T]) -> asyncio.Future[T]:
        """Queue ``job``; the future tells when it has run (the job runs even if the future
        is cancelled meanwhile)."""
        if self._closed:
            raise StorageError(f"database {self.path} is closed")
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((future, job))
        return future

    async def aclose(self) -> None:
        """Close the connection once every job queued before has run; the thread ends."""
        if self._closed:
            return
        closed = self.submit(_close)
        self._closed = True
        self._jobs.put(None)
        await closed
        if self._thread is not None:
            # its last job is done: it only has to take the end marker and return
            self._thread.join()

    # -- on the worker thread -----------------------------------------------------------

    def _serve(
        self, connect: Callable[[], sqlite3.Connection], opened: asyncio.Future[None]
    ) -> None:
        try:
            connection = connect()
        except EngineError as exc:
            _answer(opened, None, _mapped(exc, f"cannot open database {self.path}", self.path))
            return
        except BaseException as exc:
            _answer(opened, None, exc)
            return
        _answer(opened, None, None)
        context = f"database {self.path}"
        while (item := self._jobs.get()) is not None:
            future, job = item
            try:
                result = job(connection)
            except EngineError as exc:
                _answer(future, None, _mapped(exc, context, self.path))
            except BaseException as exc:
                _answer(future, None, exc)
            else:
                _answer(future, result, None)


def _close(connection: sqlite3.Connection) -> None:
    connection.close()


def _mapped(exc: sqlite3.Error | sqlite3.Warning, context: str, path: Path) -> StorageError:
    error = storage_error(exc, context, path=path)
    error.__cause__ = exc
    return error


def _answer(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    """Settle ``future`` from the worker thread (on its loop's thread)."""
    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
        future.get_loop().call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: object, error: BaseException | None) -> None:
    if future.done():  # cancelled meanwhile
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
