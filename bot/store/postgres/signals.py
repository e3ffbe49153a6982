"""``LISTEN``/``NOTIFY`` for the replicas of one database (:class:`bot.store.signals.Signals`).

A notification goes out through the pool like any statement (``pg_notify``). Listening needs
a connection that stays open and is never handed to a query: a connection of its own, opened
on the first :meth:`PgSignals.listen` and set to listen on every channel asked for. One task
keeps it: when it is lost (the server restarted, the network dropped) the task opens it again
with backoff, and listens on every channel again; the notifications sent meanwhile are
missed, which is why every listener also polls. A connection that only listens sends
nothing, so a network path that went silent (a NAT or a firewall that forgot the idle flow:
no reset, nothing) would leave it waiting for ever on a dead socket: the task probes it every
:data:`PROBE_S` (which also keeps such a flow alive) and takes one that does not answer
within :data:`PROBE_TIMEOUT_S` for lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import structlog

from bot.backoff import Backoff, BackoffPolicy
from bot.errors import StorageError
from bot.store.engine import Database
from bot.store.postgres.connection import describe
from bot.store.postgres.errors import mapped
from bot.store.signals import MAX_PAYLOAD_BYTES, Listener

log = structlog.get_logger(__name__)

RECONNECT = BackoffPolicy(initial_s=0.5, max_s=10.0)
"""How soon a lost listening connection is opened again."""

LISTEN_CONNECT_TIMEOUT_S = 10.0

PROBE_S = 15.0
"""How often the listening connection is asked a ``SELECT 1`` (it sends nothing otherwise)."""

PROBE_TIMEOUT_S = 5.0
"""A probe not answered within this is a connection lost."""

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

    def __init__(self, db: Database, connect: Connect, *, probe_s: float = PROBE_S) -> None:
        self._db = db
        self._connect = connect
        self._probe_s = probe_s
        self._listeners: dict[str, list[Listener]] = {}
        #: the channels the open connection listens on
        self._channels: set[str] = set()
        self._busy = asyncio.Lock()
        self._conn: asyncpg.Connection | None = None
        #: the task that opens, probes and opens again the listening connection
        self._keeper: asyncio.Task[None] | None = None
        self._closed = False

    async def notify(self, channel: str, payload: str) -> None:
        size = len(payload.encode())
        if size > MAX_PAYLOAD_BYTES:
            # refused here, with the size, rather than by the server's "payload string too
            # long" after a round trip
            raise StorageError(
                f"notification on {channel} not sent: its payload is {size} bytes,"
                f" more than {MAX_PAYLOAD_BYTES} bytes"
            )
        await self._db.execute("SELECT pg_notify(?, ?)", (channel, payload))

    async def listen(self, channel: str, listener: Listener) -> None:
        self._listeners.setdefault(channel, []).append(listener)
        await self._listen_on(channel)
        if not self._closed and self._keeper is None:
            self._keeper = asyncio.get_running_loop().create_task(self._keep(), name="db-listen")

    async def unlisten(self, channel: str, listener: Listener) -> None:
        """Stop calling ``listener``; the connection goes on listening on the channel (a
        notification nobody wants is dropped), so nothing is sent to the server."""
        listeners = self._listeners.get(channel, [])
        if listener in listeners:
            listeners.remove(listener)

    async def aclose(self) -> None:
        """Stop listening and close the connection."""
        self._closed = True
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)
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
        the keeper listens on every channel asked for once it has one)."""
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
                # Boundary: the driver's errors; the keeper opens the connection again and
                # listens on every channel asked for then.
                log.warning("db_listen_failed", channel=channel, error=str(exc))
                conn.terminate()

    def _still(self, conn: asyncpg.Connection) -> bool:
        """Whether ``conn`` is still the listening connection."""
        return self._conn is conn

    async def _keep(self) -> None:
        """Open the listening connection, listen on every channel asked for, probe it, and
        start again whenever it is lost, until closed."""
        backoff = Backoff(RECONNECT)
        while not self._closed:
            conn: asyncpg.Connection | None = None
            try:
                conn = await self._connect()
                lost = asyncio.Event()
                conn.add_termination_listener(_setter(lost))
                await self._listen_all(conn)
                log.info("db_listening", channels=sorted(self._channels))
                backoff = Backoff(RECONNECT)
                await self._probe(conn, lost)
                log.warning("db_listen_lost")
            except Exception as exc:
                # Boundary: the driver's errors, a StorageError of the connect (the server
                # unreachable, refusing) or a probe not answered: listened to again later.
                log.warning("db_listen_unavailable", error=str(exc) or type(exc).__name__)
            finally:
                if self._conn is conn:
                    self._conn, self._channels = None, set()
                if conn is not None and not conn.is_closed():
                    conn.terminate()
            if not self._closed:
                await asyncio.sleep(backoff.next_delay())

    async def _listen_all(self, conn: asyncpg.Connection) -> None:
        """Listen on ``conn`` on every channel asked for, those asked for meanwhile too,
        and make it the listening connection."""
        async with self._busy:
            channels: set[str] = set()
            while missing := set(self._listeners) - channels:
                for channel in sorted(missing):
                    await conn.add_listener(channel, self._heard)
                    channels.add(channel)
            self._conn, self._channels = conn, channels

    async def _probe(self, conn: asyncpg.Connection, lost: asyncio.Event) -> None:
        """Return once ``conn`` is lost: closed under it, or silent to a probe."""
        while not lost.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), self._probe_s)
            if lost.is_set():
                return
            async with self._busy, asyncio.timeout(PROBE_TIMEOUT_S):
                await conn.fetchval("SELECT 1")


def _setter(event: asyncio.Event) -> Callable[[Any], None]:
    """A termination listener that sets ``event``."""

    def terminated(conn: Any) -> None:
        event.set()

    return terminated
