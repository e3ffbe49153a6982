"""The HTTP cap on its own: :class:`bot.mcp.http_limits.CappedTransport` under a real httpx
client, against an aiohttp server on loopback that sends what an MCP server could: JSON bodies
with and without a length, compressed ones, server-sent events of every size and line ending."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from aiohttp import web

from bot.mcp.http_limits import _environment_proxy, capped_http_client
from bot.mcp.reply_limit import REPLY_TOO_LARGE, too_large_error
from tests.fakes.loopback import LoopbackServer, serve_loopback

ENCODINGS = web.AppKey("encodings", list[str])
LIMIT = 64 * 1024
BIG = 1024 * 1024
CALL = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "big"}}
NOTICE = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ERROR = json.loads(too_large_error(5, LIMIT).model_dump_json(by_alias=True, exclude_unset=True))


def result(text: str) -> bytes:
    reply = {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": text}]}}
    return json.dumps(reply).encode()


def log_notice(text: str) -> bytes:
    notice = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": text}}
    return json.dumps(notice).encode()


async def stream(request: web.Request, content_type: str, parts: list[bytes]) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": content_type})
    await response.prepare(request)
    for part in parts:
        await response.write(part)
    await response.write_eof()
    return response


def chunks(data: bytes, size: int = 50_000) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def json_chunked(request: web.Request) -> web.StreamResponse:
    return await stream(request, "application/json", chunks(result("x" * BIG)))


async def json_with_length(request: web.Request) -> web.Response:
    return web.Response(body=result("x" * BIG), content_type="application/json")


async def json_small(request: web.Request) -> web.Response:
    return web.Response(body=result("small"), content_type="application/json")


async def json_gzip(request: web.Request) -> web.Response:
    request.app[ENCODINGS].append(request.headers.get("Accept-Encoding", ""))
    body = gzip.compress(result("y" * 100))
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    return web.Response(body=body, headers=headers)


async def events_get(request: web.Request) -> web.StreamResponse:
    """The server's own stream: a small event, one over the cap, another small one."""
    big = b"event: message\ndata: " + log_notice("z" * BIG) + b"\n\n"
    parts = [b"event: message\ndata: " + log_notice("first") + b"\n\n", *chunks(big)]
    parts.append(b"event: message\ndata: " + log_notice("third") + b"\n\n")
    return await stream(request, "text/event-stream", parts)


async def events_reply(request: web.Request) -> web.StreamResponse:
    """A call's stream: a small notification, a reply over the cap (in many data lines, CRLF
    line endings split across writes), then more that must not be read."""
    lines = b"".join(b"data: " + line + b"\r\n" for line in chunks(result("w" * BIG), 1000))
    parts = [
        b"event: message\r\ndata: " + log_notice("working") + b"\r",
        b"\n\r\n",
        b"event: message\r\n",
        *chunks(lines),
        b"\r\n",
        b"event: message\ndata: " + log_notice("after the reply") + b"\n\n",
    ]
    return await stream(request, "text/event-stream", parts)


async def events_big_notice(request: web.Request) -> web.StreamResponse:
    """A call's stream: a log notification over the cap, then the small reply."""
    parts = [
        *chunks(b"event: message\ndata: " + log_notice("n" * BIG) + b"\n\n"),
        b"event: message\ndata: " + result("the answer") + b"\n\n",
    ]
    return await stream(request, "text/event-stream", parts)


@pytest.fixture
def encodings() -> list[str]:
    """The ``Accept-Encoding`` of each compressed-body request the server answered."""
    return []


@pytest.fixture
async def server(encodings: list[str]) -> AsyncIterator[LoopbackServer]:
    app = web.Application()
    app[ENCODINGS] = encodings
    app.router.add_post("/json-chunked", json_chunked)
    app.router.add_post("/json-length", json_with_length)
    app.router.add_post("/json-small", json_small)
    app.router.add_post("/json-gzip", json_gzip)
    app.router.add_get("/events", events_get)
    app.router.add_post("/events-reply", events_reply)
    app.router.add_post("/events-big-notice", events_big_notice)
    async with serve_loopback(app) as served:
        yield served


@pytest.fixture
async def client(server: LoopbackServer) -> AsyncIterator[httpx2.AsyncClient]:
    async with capped_http_client(server.origin, server="web", limit=LIMIT, headers={}) as http:
        yield http


async def events(response: httpx2.Response) -> list[Any]:
    return [json.loads(e.data) async for e in httpx2.EventSource(response, max_event_size=None)]


@pytest.mark.parametrize("path", ["/json-chunked", "/json-length"])
async def test_a_json_body_over_the_cap_is_the_calls_error(
    client: httpx2.AsyncClient, server: LoopbackServer, path: str
) -> None:
    response = await client.post(server.url(path), json=CALL)
    assert response.status_code == 200
    assert response.json() == ERROR
    assert ERROR["error"]["code"] == REPLY_TOO_LARGE


async def test_a_json_body_under_the_cap_is_passed_on(
    client: httpx2.AsyncClient, server: LoopbackServer
) -> None:
    response = await client.post(server.url("/json-small"), json=CALL)
    assert response.content == result("small")


async def test_a_body_over_the_cap_that_answers_no_call_is_a_read_error(
    client: httpx2.AsyncClient, server: LoopbackServer
) -> None:
    with pytest.raises(httpx2.ReadError, match=f"exceeded {LIMIT} bytes"):
        await client.post(server.url("/json-chunked"), json=NOTICE)


async def test_a_compressed_body_is_refused(
    client: httpx2.AsyncClient, server: LoopbackServer, encodings: list[str]
) -> None:
    response = await client.post(server.url("/json-gzip"), json=CALL)
    assert response.json() == ERROR
    assert "content-encoding" not in response.headers
    assert encodings == ["identity"]


async def test_an_event_over_the_cap_on_the_servers_stream_is_dropped(
    client: httpx2.AsyncClient, server: LoopbackServer
) -> None:
    async with client.stream("GET", server.url("/events")) as response:
        received = await events(response)
    assert [e["params"]["data"] for e in received] == ["first", "third"]


async def test_a_reply_event_over_the_cap_ends_the_call_with_its_error(
    client: httpx2.AsyncClient, server: LoopbackServer
) -> None:
    async with client.stream("POST", server.url("/events-reply"), json=CALL) as response:
        received = await events(response)
    assert received == [json.loads(log_notice("working")), ERROR]


async def test_a_notification_over_the_cap_is_dropped_and_the_reply_passes(
    client: httpx2.AsyncClient, server: LoopbackServer
) -> None:
    async with client.stream("POST", server.url("/events-big-notice"), json=CALL) as response:
        received = await events(response)
    assert received == [json.loads(result("the answer"))]


def test_the_environments_proxy_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client given a transport reads no proxy settings itself: the cap's client does."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert _environment_proxy("https://mcp.example.com/mcp") == "http://proxy.example:3128"
    assert _environment_proxy("https://tools.internal.example/mcp") is None
    assert _environment_proxy("http://mcp.example.com/mcp") is None  # no HTTP_PROXY
