"""The engine's own pool of PostgreSQL connections: taken and given back without a task.

asyncpg's pool gives a connection back through ``asyncio.shield`` (a task per release), a
timeout context and a reset coroutine, and arms a timer for the connection's idle lifetime
at every release: tens of microseconds per unit, which a turn of twenty units pays twenty
times. The engine needs less: its units end their transactions themselves
(:mod:`~bot.store.postgres.database`), so a connection handed back is either clean and goes
straight to the next waiter (or the idle list), or it is closed, in a transaction the
engine lost track of, and is cut rather than rolled back: the server then rolls back.

:meth:`Pool.acquire` takes the connection used last (its statements are prepared and its
pages warm); an idle one older than ``idle_lifetime_s`` is closed when it is next looked
at, so a quiet daemon does not hold its peak number of server processes. A new connection
is opened only when none is idle and fewer than ``size`` are open; a failure to open one
leaves its place free for the next caller (no reconnecting in the background: the next
unit tries again, and fails as :class:`~bot.errors.StorageUnavailable` while the server
cannot be reached).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable

import asyncpg

Connect = Callable[[], Awaitable[asyncpg.Connection]]


class Pool:
    """At most ``size`` connections opened by ``connect``; :meth:`acquire` and
    :meth:`release`, :meth:`close` or :meth:`terminate` at the end."""

    def __init__(self, connect: Connect, *, size: int, idle_lifetime_s: float) -> None:
        self._connect = connect
        self._size = size
        self._idle_lifetime_s = idle_lifetime_s
        self._idle: list[tuple[asyncpg.Connection, float]] = []
        self._open: set[asyncpg.Connection] = set()
        self._opening = 0
        self._waiters: deque[asyncio.Future[asyncpg.Connection | None]] = deque()
        self._closing = False
        self._all_back: asyncio.Event | None = None

    @property
    def in_use(self) -> int:
        return len(self._open) - len(self._idle)

    async def acquire(self) -> asyncpg.Connection:
        """A connection for the caller alone until :meth:`release`; waits while ``size``
        are in use. asyncpg's errors when one cannot be opened."""
        while True:
            self._check_open()
            conn = self._take_idle()
            if conn is not None:
                return conn
            if len(self._open) + self._opening < self._size:
                return await self._open_one()
            waiter: asyncio.Future[asyncpg.Connection | None] = (
                asyncio.get_running_loop().create_future()
            )
            self._waiters.append(waiter)
            try:
                handed = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    self.release(waiter.result())  # handed over as the caller was cancelled
                else:
                    self._forget(waiter)
                raise
            if handed is not None:
                return handed
            # None: a place was freed (a connection closed); open one or wait again

    def release(self, conn: asyncpg.Connection) -> None:
        """Give ``conn`` back: to the first waiter, else to the idle list; cut it if it is
        closed, still in a transaction, or the pool is closing."""
        if conn not in self._open:
            return
        if conn.is_closed() or conn.is_in_transaction():
            self._drop(conn)
            return
        while self._waiters and not self._closing:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append((conn, time.monotonic()))
        self._note_back()

    async def close(self) -> None:
        """Wait for the connections in use to come back, then close them all."""
        self._closing = True
        self._fail_waiters()
        if self.in_use > 0:
            self._all_back = asyncio.Event()
            await self._all_back.wait()
        idle, self._idle = self._idle, []
        for conn, _ in idle:
            self._open.discard(conn)
        await asyncio.gather(*(_close(conn) for conn, _ in idle))

    def terminate(self) -> None:
        """Cut every connection at once (in use or not)."""
        self._closing = True
        self._fail_waiters()
        self._idle = []
        conns, self._open = self._open, set()
        for conn in conns:
            conn.terminate()
        if self._all_back is not None:
            self._all_back.set()

    # -- internals ------------------------------------------------------------------------

    def _take_idle(self) -> asyncpg.Connection | None:
        now = time.monotonic()
        while self._idle and now - self._idle[0][1] > self._idle_lifetime_s:
            conn, _ = self._idle.pop(0)  # the oldest first: unused for a while
            self._open.discard(conn)
            asyncio.get_running_loop().create_task(_close(conn))
        while self._idle:
            conn, _ = self._idle.pop()
            if not conn.is_closed():
                return conn
            self._open.discard(conn)
        return None

    async def _open_one(self) -> asyncpg.Connection:
        self._opening += 1
        try:
            conn = await self._connect()
        except BaseException:
            self._opening -= 1
            self._wake_one()  # its place is free again for whoever waits
            raise
        self._opening -= 1
        if self._closing:
            conn.terminate()
            self._check_open()
        self._open.add(conn)
        return conn

    def _drop(self, conn: asyncpg.Connection) -> None:
        self._open.discard(conn)
        if not conn.is_closed():
            conn.terminate()
        self._note_back()
        self._wake_one()

    def _note_back(self) -> None:
        if self._all_back is not None and self.in_use == 0:
            self._all_back.set()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _forget(self, waiter: asyncio.Future[asyncpg.Connection | None]) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)

    def _fail_waiters(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(asyncpg.InterfaceError("the pool is closed"))

    def _check_open(self) -> None:
        if self._closing:
            raise asyncpg.InterfaceError("the pool is closed")


async def _close(conn: asyncpg.Connection) -> None:
    try:
        await conn.close(timeout=5.0)
    except (asyncpg.InterfaceError, asyncpg.PostgresError, OSError, TimeoutError):
        conn.terminate()
