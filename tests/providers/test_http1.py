"""The plain-HTTP exchange against a real loopback socket that answers scripted bytes: how a
reply is framed (chunked, a length, the end of the connection), when its connection is kept,
and what a reply that is not HTTP/1.1 becomes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from bot.providers.http1 import ConnectionCut, Http1Pool, Http1Reply, Unreachable
from tests.providers.test_retry import closed_port


class ScriptedServer:
    """Answers each request (read up to its body's length) with the next scripted bytes,
    and counts the connections it accepted."""

    def __init__(self, replies: list[bytes]) -> None:
        self.replies = replies
        self.connections = 0
        self.requests: list[bytes] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                self.requests.append(head + await reader.readexactly(length))
                reply = self.replies.pop(0)
                writer.write(reply)
                await writer.drain()
                lowered = reply.lower()
                framed = b"content-length" in lowered or b"chunked" in lowered
                if not framed or b"connection: close" in lowered or lowered.startswith(b"http/1.0"):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def pool(port: int, **overrides: object) -> Http1Pool:
    fields: dict[str, object] = {
        "host": "127.0.0.1",
        "port": port,
        "path": "/v1/chat/completions",
        "headers": {"Authorization": "Bearer k"},
        "timeout_s": 5.0,
        "limit": 4,
        "keepalive_s": 15.0,
    }
    fields.update(overrides)
    return Http1Pool(**fields)  # type: ignore[arg-type]


@pytest.fixture
async def closing() -> AsyncIterator[list[Http1Pool]]:
    made: list[Http1Pool] = []
    yield made
    for each in made:
        await each.aclose()


async def whole(reply: Http1Reply) -> bytes:
    return await reply.read()


async def piece(reply: Http1Reply) -> bytes:
    return await reply.readany()


async def two_posts(
    closing: list[Http1Pool],
    replies: list[bytes],
    *,
    read_first: Callable[[Http1Reply], Awaitable[bytes]],
) -> tuple[bytes, bytes, int]:
    """Two posts through one pool to a server answering ``replies``: what ``read_first``
    read of the first reply before it was released, the second reply's body, and how many
    connections the server accepted."""
    async with ScriptedServer(replies) as server:
        client = pool(server.port)
        closing.append(client)
        first = await client.post(b"{}")
        read = await read_first(first)
        first.release()
        second = await client.post(b"{}")
        body = await second.read()
        second.release()
    return read, body, server.connections


CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
)
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"


async def test_a_chunked_reply_is_joined_and_its_connection_kept(
    closing: list[Http1Pool],
) -> None:
    async with ScriptedServer([CHUNKED, LENGTH]) as server:
        client = pool(server.port)
        closing.append(client)
        first = await client.post(b'{"a":1}')
        assert (first.status, await first.read()) == (200, b"hello world")
        first.release()
        second = await client.post(b"{}")
        assert await second.read() == b"abc"
        second.release()
    assert server.connections == 1
    request = server.requests[0]
    assert request.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n".encode() in request
    assert b"Authorization: Bearer k\r\n" in request
    assert request.endswith(b'Content-Length: 7\r\n\r\n{"a":1}')


async def test_an_informational_reply_before_the_answer_is_passed_by(
    closing: list[Http1Pool],
) -> None:
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
    async with ScriptedServer([early + LENGTH]) as server:
        client = pool(server.port)
        closing.append(client)
        answer = await client.post(b"{}")
        assert (answer.status, "link" in answer.headers, await answer.read()) == (
            200,
            False,
            b"abc",
        )
        answer.release()


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\n\r\nabc",  # the body ends with the connection
        b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabc",
    ],
    ids=["connection-close", "no-length", "http-1.0"],
)
async def test_a_reply_that_ends_its_connection_is_not_kept(
    closing: list[Http1Pool], reply: bytes
) -> None:
    assert await two_posts(closing, [reply, LENGTH], read_first=whole) == (b"abc", b"abc", 2)


async def test_a_reply_released_half_read_closes_its_connection(
    closing: list[Http1Pool],
) -> None:
    assert await two_posts(closing, [CHUNKED, LENGTH], read_first=piece) == (b"hello", b"abc", 2)


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: \xc2\xb2\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nshort",
    ],
    ids=[
        "not-http",
        "header-without-colon",
        "bad-length",
        "bad-chunk-size",
        "negative-chunk-size",
        "spaced-chunk-size",
        "superscript-length",
        "cut-body",
    ],
)
async def test_a_reply_that_is_not_http_1_1_is_a_cut_connection(
    closing: list[Http1Pool], reply: bytes
) -> None:
    async with ScriptedServer([reply]) as server:
        client = pool(server.port)
        closing.append(client)
        with pytest.raises(ConnectionCut):
            answer = await client.post(b"{}")
            try:
                await answer.read()
            finally:
                answer.release()


async def test_nothing_listening_is_unreachable(closing: list[Http1Pool]) -> None:
    client = pool(closed_port())
    closing.append(client)
    with pytest.raises(Unreachable):
        await client.post(b"{}")


@pytest.mark.parametrize("value", ["k\r\nX-Injected: 1", "k\nX: 1", "k\0"])
def test_a_header_value_with_a_line_break_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="line break"):
        pool(80, headers={"Authorization": value})
