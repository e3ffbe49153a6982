"""``LISTEN``/``NOTIFY`` for the replicas of one database (:class:`bot.store.signals.Signals`).

A notification goes out through the pool like any statement (``pg_notify``). Listening needs
a connection that stays open and is never handed to a query: a connection of its own, opened
on the first :meth:`PgSignals.listen` and set to listen on every channel asked for. When it
is lost (the server restarted, the network dropped) it is opened again with backoff; the
notifications sent meanwhile are missed, which is why every listener also polls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import structlog

from bot.backoff import Backoff, BackoffPolicy
from bot.store.engine import Database
from bot.store.postgres.connection import describe
from bot.store.postgres.errors import mapped
from bot.store.signals import Listener

log = structlog.get_logger(__name__)

RECONNECT = BackoffPolicy(initial_s=0.5, max_s=10.0)
"""How soon a lost listening connection is opened again."""

LISTEN_CONNECT_TIMEOUT_S = 10.0

Connect = Callable[[], Awaitable[asyncpg.Connection]]
"""Opens a new connection to the database for listening."""


def connector(url: str, *, password: str | None) -> Connect:
    """How the listening connection to ``url`` is opened (``password`` as the pool's;
    nothing of it reaches a message)."""

    async def connect() -> asyncpg.Connection:
        async with mapped(f"cannot listen on database {describe(url)}"):
            conn: asyncpg.Connection = await asyncpg.connect(
                url,
                password=password,
                timeout=LISTEN_CONNECT_TIMEOUT_S,
                server_settings={"application_name": "hatchway-listen"},
            )
        return conn

    return connect


class PgSignals:
    """Notifications through the database, heard on a connection of their own."""

    def __init__(self, db: Database, connect: Connect) -> None:
        self._db = db
        self._connect = connect
        self._listeners: dict[str, list[Listener]] = {}
        #: the channels the open connection listens on
        self._channels: set[str] = set()
        self._busy = asyncio.Lock()
        self._conn: asyncpg.Connection | None = None
        self._opening: asyncio.Task[None] | None = None
        self._closed = False

    async def notify(self, channel: str, payload: str) -> None:
        await self._db.execute("SELECT pg_notify(?, ?)", (channel, payload))

    async def listen(self, channel: str, listener: Listener) -> None:
        self._listeners.setdefault(channel, []).append(listener)
        await self._listen_on(channel)
        self._open_soon()

    async def unlisten(self, channel: str, listener: Listener) -> None:
        """Stop calling ``listener``; the connection goes on listening on the channel (a
        notification nobody wants is dropped), so nothing is sent to the server."""
        listeners = self._listeners.get(channel, [])
        if listener in listeners:
            listeners.remove(listener)

    async def aclose(self) -> None:
        """Stop listening and close the connection."""
        self._closed = True
        if self._opening is not None:
            self._opening.cancel()
            await asyncio.gather(self._opening, return_exceptions=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()

    # -- internals --------------------------------------------------------------------------

    def _heard(self, conn: Any, pid: int, channel: str, payload: str) -> None:
        for listener in list(self._listeners.get(channel, ())):
            try:
                listener(payload)
            except Exception:
                # Boundary: one listener's bug does not stop the others from hearing.
                log.exception("db_signal_listener_failed", channel=channel)

    async def _listen_on(self, channel: str) -> None:
        """Have the open connection listen on ``channel`` too (nothing while none is open:
        opening it listens on every channel asked for)."""
        conn = self._conn
        if conn is None or channel in self._channels:
            return
        async with self._busy:  # one operation at a time on the connection
            if channel in self._channels or not self._still(conn):
                return
            try:
                await conn.add_listener(channel, self._heard)
                self._channels.add(channel)
            except Exception as exc:
                # Boundary: the driver's errors; the connection is opened again, and listens
                # on every channel asked for then.
                log.warning("db_listen_failed", channel=channel, error=str(exc))
                self._lost(conn)

    def _still(self, conn: asyncpg.Connection) -> bool:
        """Whether ``conn`` is still the listening connection."""
        return self._conn is conn

    def _open_soon(self) -> None:
        if self._closed or self._conn is not None or not self._listeners:
            return
        if self._opening is None or self._opening.done():
            self._opening = asyncio.get_running_loop().create_task(self._open(), name="db-listen")

    async def _open(self) -> None:
        backoff = Backoff(RECONNECT)
        while not self._closed:
            conn: asyncpg.Connection | None = None
            channels = set(self._listeners)
            try:
                conn = await self._connect()
                async with self._busy:
                    for channel in sorted(channels):
                        await conn.add_listener(channel, self._heard)
            except Exception as exc:
                # Boundary: the driver's errors, or a StorageError of the connect (the
                # server unreachable, refusing): listened to again a little later.
                if conn is not None:
                    conn.terminate()
                log.warning("db_listen_unavailable", error=str(exc))
                await asyncio.sleep(backoff.next_delay())
                continue
            conn.add_termination_listener(self._lost)
            self._conn, self._channels = conn, channels
            log.info("db_listening", channels=sorted(channels))
            # a channel asked for while this connection was being opened
            for channel in set(self._listeners) - channels:
                await self._listen_on(channel)
            return

    def _lost(self, conn: Any) -> None:
        if self._conn is conn:
            self._conn = None
            self._channels = set()
            if not self._closed:
                log.warning("db_listen_lost")
        if not conn.is_closed():
            conn.terminate()
        self._open_soon()
