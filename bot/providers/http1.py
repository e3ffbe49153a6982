"""``POST`` to one ``http://`` origin over HTTP/1.1 on asyncio streams, with kept-alive
connections: the Chat Completions client's exchange for a plain-HTTP endpoint reached
without a proxy (a model server on this host or the local network).

It does what :mod:`bot.providers.chat_client` needs and no more: no TLS, no proxy, no
redirects, no compression, no cookies. So a ``hatchway chat`` against such an endpoint does
not import aiohttp, which makes two TLS contexts at import (each loading the system's CA
bundle): about a sixth of a one-shot's CPU and 7 MB of its peak RSS (``bench/oneshot.py``,
docs/performance.md). An ``https://`` endpoint, or one the environment sends through a
proxy, goes through aiohttp (:mod:`bot.providers.aiohttp_exchange`).

The protocol itself is h11's (the sans-I/O HTTP/1.1 implementation httpx's own transport is
built on): it frames the request and the reply (``Transfer-Encoding: chunked``, else
``Content-Length``, else up to the end of the connection), passes informational replies by,
refuses what is not HTTP/1.1, and says whether a connection may carry the next request; this
module only moves bytes between it and a socket. A connection goes back to the pool when its
reply was read to the end and neither side asked to close it; it is kept for
``keepalive_s``, and at most ``limit`` are open at once (a request beyond that waits for
one). Errors: :class:`TimeoutError` when connecting or any read takes ``timeout_s``;
:class:`Unreachable` when no connection could be made; :class:`ConnectionCut` for a
connection that closed or answered what is not HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping
from typing import TypeVar

import h11

#: The most a reply's status line and headers may take together.
HEAD_LIMIT = 65_536
READ_SIZE = 65_536

T = TypeVar("T")


class Unreachable(ConnectionError):
    """No connection to the endpoint could be made."""


class ConnectionCut(ConnectionError):
    """The connection closed, or the reply was not HTTP/1.1, before it was read whole."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.protocol = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_LIMIT)
        self.idle_since = 0.0

    def close(self) -> None:
        self.writer.close()

    def reusable(self) -> bool:
        """Whether the exchange is over and both sides keep the connection: then it is made
        ready for the next request."""
        protocol = self.protocol
        if protocol.our_state is h11.DONE and protocol.their_state is h11.DONE:
            protocol.start_next_cycle()
            return not self.reader.at_eof()
        return False


class Http1Reply:
    """A reply's status and headers (names lower-cased, repeated ones joined), and its body
    read as it comes. :meth:`release` must be called once: the connection then goes back to
    the pool or is closed."""

    def __init__(self, pool: Http1Pool, connection: _Connection, response: h11.Response) -> None:
        self.status = response.status_code
        headers: dict[str, str] = {}
        for raw_name, raw_value in response.headers:
            name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers: Mapping[str, str] = headers
        self._pool = pool
        self._connection: _Connection | None = connection
        self._done = False

    async def readany(self) -> bytes:
        """The next piece of the body; ``b""`` once it has been read to its end."""
        while not self._done:
            connection = self._connection
            if connection is None:
                raise ConnectionCut("the reply was released")
            event = await self._pool.next_event(connection)
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._done = True
            else:  # h11 gives nothing else inside a reply's body
                raise ConnectionCut(f"{type(event).__name__} inside the reply's body")
        return b""

    async def read(self) -> bytes:
        """The rest of the body."""
        pieces = []
        while piece := await self.readany():
            pieces.append(piece)
        return b"".join(pieces)

    def release(self) -> None:
        """Back to the pool when the body was read to its end, closed otherwise."""
        connection, self._connection = self._connection, None
        if connection is not None:
            self._pool.give_back(connection, reusable=self._done and connection.reusable())


class Http1Pool:
    """Posts bodies to ``path`` at one ``host:port`` with ``headers``. See the module doc."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        path: str,
        headers: Mapping[str, str],
        timeout_s: float,
        limit: int,
        keepalive_s: float,
    ) -> None:
        self._host = host
        self._port = port
        self._path = path
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address in brackets
        authority = shown if port == 80 else f"{shown}:{port}"
        self._headers = [("Host", authority)]
        for name, value in headers.items():
            if any(ch in name + value for ch in "\r\n\0"):
                raise ValueError(f"the request header {name} holds a line break")
            self._headers.append((name, value))
        self._timeout_s = timeout_s
        self._keepalive_s = keepalive_s
        self._slots = asyncio.Semaphore(limit)
        self._idle: list[_Connection] = []

    async def post(self, body: bytes) -> Http1Reply:
        """The reply to ``body`` once its status and headers are read (any status)."""
        await self._slots.acquire()
        try:
            connection = self._kept() or await self._connect()
        except BaseException:
            self._slots.release()
            raise
        try:
            protocol = connection.protocol
            request = h11.Request(
                method="POST",
                target=self._path,
                headers=[*self._headers, ("Content-Length", str(len(body)))],
            )
            connection.writer.write(
                b"".join(
                    (
                        protocol.send(request) or b"",
                        protocol.send(h11.Data(data=body)) or b"",
                        protocol.send(h11.EndOfMessage()) or b"",
                    )
                )
            )
            await self.timed(connection.writer.drain())
            return await self._reply(connection)
        except BaseException:
            self.give_back(connection, reusable=False)
            raise

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def give_back(self, connection: _Connection, *, reusable: bool) -> None:
        """A connection whose request is over: kept for the next one, or closed."""
        self._slots.release()
        if reusable:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    async def timed(self, step: Awaitable[T]) -> T:
        """``step``, or :class:`TimeoutError` after ``timeout_s``; a connection that fails
        under it is :class:`ConnectionCut`."""
        try:
            async with asyncio.timeout(self._timeout_s):
                return await step
        except TimeoutError:  # an OSError too
            raise
        except (OSError, EOFError) as exc:
            raise ConnectionCut(str(exc) or type(exc).__name__) from exc

    async def next_event(self, connection: _Connection) -> h11.Event:
        """The reply's next event, reading from the socket while h11 needs more (at the end
        of the connection h11 is told so, and ends a reply framed by it)."""
        protocol = connection.protocol
        while True:
            try:
                event = protocol.next_event()
            except h11.RemoteProtocolError as exc:
                raise ConnectionCut(f"not an HTTP/1.1 reply: {exc}") from None
            if event is h11.NEED_DATA:
                protocol.receive_data(await self.timed(connection.reader.read(READ_SIZE)))
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionCut("the connection closed before the reply ended")
            elif event is h11.PAUSED:  # only after a whole reply, which is read by then
                raise ConnectionCut("a reply after the reply")
            else:
                assert isinstance(event, h11.Event)
                return event

    def _kept(self) -> _Connection | None:
        """The most recently idle connection still fit to use; the others past their time
        are closed."""
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.idle_since < self._keepalive_s and not connection.reader.at_eof():
                return connection
            connection.close()
        return None

    async def _connect(self) -> _Connection:
        try:
            async with asyncio.timeout(self._timeout_s):
                reader, writer = await asyncio.open_connection(self._host, self._port)
        except TimeoutError:
            raise
        except OSError as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from exc
        return _Connection(reader, writer)

    async def _reply(self, connection: _Connection) -> Http1Reply:
        """The final reply's status and headers: an informational one (1xx, such as
        ``103 Early Hints``) before it is passed by."""
        while True:
            event = await self.next_event(connection)
            if isinstance(event, h11.Response):
                return Http1Reply(self, connection, event)
            if not isinstance(event, h11.InformationalResponse):
                raise ConnectionCut(f"{type(event).__name__} where a reply begins")
