"""``POST`` to one ``http://`` origin over HTTP/1.1 on asyncio streams, with kept-alive
connections: the Chat Completions client's exchange for a plain-HTTP endpoint reached
without a proxy (a model server on this host or the local network).

It does what :mod:`bot.providers.chat_client` needs and no more: no TLS, no proxy, no
redirects, no compression, no cookies. So a ``hatchway chat`` against such an endpoint does
not import aiohttp, which makes two TLS contexts at import (each loading the system's CA
bundle): about a sixth of a one-shot's CPU and 7 MB of its peak RSS (``bench/oneshot.py``,
docs/performance.md). An ``https://`` endpoint, or one the environment sends through a
proxy, goes through aiohttp (:mod:`bot.providers.aiohttp_exchange`).

The reply is read as HTTP/1.1 frames it: ``Transfer-Encoding: chunked``, else
``Content-Length``, else up to the end of the connection. A connection goes back to the pool
when its reply was read to the end and neither side asked to close it; it is kept for
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

#: The longest status or header line, and the most header lines, a reply may have.
LINE_LIMIT = 65_536
MAX_HEADERS = 100
READ_SIZE = 65_536
HEX_DIGITS = b"0123456789abcdefABCDEF"
#: A chunk's size has at most this many hex digits (2**64 - 1 has 16).
MAX_CHUNK_DIGITS = 16

T = TypeVar("T")


class Unreachable(ConnectionError):
    """No connection to the endpoint could be made."""


class ConnectionCut(ConnectionError):
    """The connection closed, or the reply was not HTTP/1.1, before it was read whole."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def close(self) -> None:
        self.writer.close()


class Http1Reply:
    """A reply's status and headers (names lower-cased), and its body read as it comes.
    :meth:`release` must be called once: the connection then goes back to the pool or is
    closed."""

    def __init__(
        self,
        pool: Http1Pool,
        connection: _Connection,
        status: int,
        headers: dict[str, str],
        *,
        reusable: bool,
    ) -> None:
        self.status = status
        self.headers: Mapping[str, str] = headers
        self._pool = pool
        self._connection: _Connection | None = connection
        self._reusable = reusable
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._left: int | None = None  # bytes of the body (or of the chunk) still to read
        self._done = False
        if self._chunked:
            self._left = 0
        elif length is not None:
            if not (length.isascii() and length.isdigit()):
                raise ConnectionCut(f"a Content-Length of {length!r}")
            self._left = int(length)
            self._done = self._left == 0
        elif status in (204, 304):
            self._left, self._done = 0, True
        else:
            self._reusable = False  # the body ends with the connection

    async def readany(self) -> bytes:
        """The next piece of the body; ``b""`` once it has been read to its end."""
        if self._done:
            return b""
        connection = self._connection
        if connection is None:
            raise ConnectionCut("the reply was released")
        reader = connection.reader
        if self._chunked:
            return await self._next_chunk(reader)
        if self._left is None:
            piece = await self._pool.timed(reader.read(READ_SIZE))
            self._done = not piece
            return piece
        piece = await self._pool.timed(reader.read(min(self._left, READ_SIZE)))
        if not piece:
            raise ConnectionCut("the connection closed inside the reply's body")
        self._left -= len(piece)
        self._done = self._left == 0
        return piece

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
            self._pool.give_back(connection, reusable=self._done and self._reusable)

    async def _next_chunk(self, reader: asyncio.StreamReader) -> bytes:
        assert self._left is not None
        if self._left == 0:
            size_line = await self._pool.line(reader)
            size, extension, _ = size_line.partition(b";")
            if not extension:  # spaces or tabs may end the line (as h11 takes them)
                size = size.rstrip(b" \t")
            # int() would take a sign, "0x", spaces around or underscores
            if not 0 < len(size) <= MAX_CHUNK_DIGITS or size.strip(HEX_DIGITS):
                raise ConnectionCut(f"a chunk size of {size[:20]!r}")
            self._left = int(size, 16)
            if self._left == 0:  # the last chunk: trailers, then an empty line
                while await self._pool.line(reader):
                    pass
                self._done = True
                return b""
        piece = await self._pool.timed(reader.read(min(self._left, READ_SIZE)))
        if not piece:
            raise ConnectionCut("the connection closed inside a chunk")
        self._left -= len(piece)
        if self._left == 0 and await self._pool.line(reader):
            raise ConnectionCut("a chunk longer than its size")
        return piece


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
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address in brackets
        authority = shown if port == 80 else f"{shown}:{port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {authority}"]
        for name, value in headers.items():
            if any(ch in name + value for ch in "\r\n\0"):
                raise ValueError(f"the request header {name} holds a line break")
            lines.append(f"{name}: {value}")
        self._head = "\r\n".join(lines).encode("latin-1")
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
            connection.writer.write(
                self._head + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
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
        if reusable and not connection.reader.at_eof():
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
        except (TimeoutError, ConnectionCut):  # TimeoutError is an OSError too
            raise
        except (OSError, EOFError) as exc:
            raise ConnectionCut(str(exc) or type(exc).__name__) from exc

    async def line(self, reader: asyncio.StreamReader) -> bytes:
        """The next line without its CRLF (``b""`` for an empty one)."""
        try:
            raw = await self.timed(reader.readuntil(b"\r\n"))
        except asyncio.LimitOverrunError:
            raise ConnectionCut("a line longer than the reply may have") from None
        return raw[:-2]

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
                reader, writer = await asyncio.open_connection(
                    self._host, self._port, limit=LINE_LIMIT
                )
        except TimeoutError:
            raise
        except OSError as exc:
            raise Unreachable(str(exc) or type(exc).__name__) from exc
        return _Connection(reader, writer)

    async def _reply(self, connection: _Connection) -> Http1Reply:
        """The final reply's status and headers: an informational one (1xx, such as
        ``103 Early Hints``) before it is read and passed by."""
        while True:
            version, status, headers = await self._status_and_headers(connection.reader)
            if not 100 <= status < 200:
                break
        closing = "close" in headers.get("connection", "").lower() or version == b"HTTP/1.0"
        return Http1Reply(self, connection, status, headers, reusable=not closing)

    async def _status_and_headers(
        self, reader: asyncio.StreamReader
    ) -> tuple[bytes, int, dict[str, str]]:
        """A status line and its header lines (names lower-cased, repeated ones joined)."""
        status_line = await self.line(reader)
        version, _, rest = status_line.partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or not code.isdigit():
            raise ConnectionCut(f"not an HTTP/1.1 reply: {status_line[:40]!r}")
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS + 1):
            line = await self.line(reader)
            if not line:
                break
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise ConnectionCut(f"a header line without a colon: {line[:40]!r}")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        else:
            raise ConnectionCut(f"more than {MAX_HEADERS} header lines")
        return version, int(code), headers
