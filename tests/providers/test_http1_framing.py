"""The plain-HTTP exchange's reading of a reply against h11's, the sans-I/O HTTP/1.1
implementation under httpx's transport, as the oracle: hypothesis writes replies (framed by
length, by chunks or by the connection's end; informational replies before them; odd
framing values among them), a real loopback socket answers each once, and whatever
``bot/providers/http1.py`` accepts, h11 reads the same way: the same status and the same
body. Where both read a well-formed reply, both accept it. h11 is not used at run time: per
turn it cost about a quarter more of the loop's CPU (docs/performance.md)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import h11
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.providers.http1 import ConnectionCut, Http1Pool

Reading = tuple[int, bytes] | None

#: Framing values a server should not send, made from the right one (``{}``); the exchange may
#: refuse any of them, and must read none differently from h11.
ODD_LENGTHS = ["+{}", "-{}", "0x{}", " {}", "{} ", "{0},{0}", "0{}", "{}.0", "", "{}0", "{}\u0663"]
ODD_CHUNK_SIZES = ["+{}", "-{}", "0x{}", " {}", "{} ", "0{}", "{};x=1", "{};", "", "{}G", "{}\t"]


@dataclass(frozen=True)
class Reply:
    raw: bytes
    well_formed: bool


@st.composite
def replies(draw: st.DrawFn) -> Reply:
    well_formed = True
    head = b""
    for code in draw(st.lists(st.sampled_from([100, 103]), max_size=2)):
        head += b"HTTP/1.1 %d Info\r\nLink: </a>\r\n\r\n" % code
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.1", b"HTTP/1.0"]))
    status = draw(st.sampled_from([200, 201, 400, 429, 500, 503]))
    reason = draw(st.sampled_from([b" OK", b" Whatever it says", b" "]))
    lines = [version + b" %d" % status + reason]
    lines += draw(
        st.lists(
            st.sampled_from(
                [b"Content-Type: application/json", b"Server: fake", b"X-Request-Id: a1"]
            ),
            max_size=3,
        )
    )
    if draw(st.booleans()):
        lines.append(b"Connection: " + draw(st.sampled_from([b"close", b"keep-alive"])))
    framing = draw(st.sampled_from(["length", "chunked", "close"]))
    body = draw(st.binary(max_size=40))
    if framing == "length":
        value = str(len(body))
        if draw(st.integers(0, 2)) == 0:
            value, well_formed = draw(st.sampled_from(ODD_LENGTHS)).format(value), False
        lines.append(b"Content-Length: " + value.encode())
        payload = body
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: chunked")
        payload = b""
        pieces = draw(st.lists(st.binary(min_size=1, max_size=12), max_size=4))
        for piece in pieces:
            size = draw(st.sampled_from(["%x", "%X", "%04x"])) % len(piece)
            if draw(st.integers(0, 3)) == 0:
                size, well_formed = draw(st.sampled_from(ODD_CHUNK_SIZES)).format(size), False
            if draw(st.integers(0, 4)) == 0:
                size += ";name=value"
            payload += size.encode() + b"\r\n" + piece + b"\r\n"
        payload += b"0\r\n"
        if draw(st.booleans()):
            payload += b"X-Trailer: t\r\n"
        payload += b"\r\n"
    else:
        payload = body
    return Reply(head + b"\r\n".join(lines) + b"\r\n\r\n" + payload, well_formed)


def h11_reading(raw: bytes) -> Reading:
    """What h11 reads from ``raw`` as the reply to a POST, the connection ending after it."""
    client = h11.Connection(h11.CLIENT)
    client.send(
        h11.Request(method="POST", target="/", headers=[("Host", "x"), ("Content-Length", "2")])
    )
    client.send(h11.Data(data=b"{}"))
    client.send(h11.EndOfMessage())
    client.receive_data(raw)
    client.receive_data(b"")
    status, body = None, b""
    try:
        while True:
            event = client.next_event()
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert status is not None
                return status, body
            elif not isinstance(event, h11.InformationalResponse):
                return None  # the connection ended first
    except h11.RemoteProtocolError:
        return None


async def exchange_reading(raw: bytes) -> Reading:
    """What the exchange reads from ``raw`` sent by a real socket, which then closes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n{}")
        writer.write(raw)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    client = Http1Pool(
        host="127.0.0.1",
        port=server.sockets[0].getsockname()[1],
        path="/",
        headers={},
        timeout_s=10.0,
        limit=1,
        keepalive_s=15.0,
    )
    try:
        reply = await client.post(b"{}")
        try:
            return reply.status, await reply.read()
        finally:
            reply.release()
    except ConnectionCut:
        return None
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies())
def test_the_exchange_reads_a_reply_as_h11_does(reply: Reply) -> None:
    ours = asyncio.run(exchange_reading(reply.raw))
    oracle = h11_reading(reply.raw)
    if ours is not None:
        assert ours == oracle
    if reply.well_formed:
        assert oracle is not None
        assert ours == oracle
