"""The streamable-HTTP side of the reply cap: an httpx transport that never reads a body whole.

The SDK reads a JSON reply with ``response.aread()`` (all of it, however large) and
server-sent events through a decoder of its own. :class:`CappedTransport` wraps the real
transport of the client the SDK is given (:func:`capped_http_client`) and replaces each
response's body with a bounded one:

* **JSON** (and any other body): read up to ``limit`` bytes; past that the rest is not read,
  the connection is closed, and the body the SDK sees is a JSON-RPC error for the request the
  POST carried (:func:`~bot.mcp.reply_limit.too_large_error`), so the call fails at once with
  a message that names the cap. A body that answers no request ends in ``ReadError``.
* **Server-sent events**: passed on one whole event at a time. An event past ``limit`` bytes
  is skipped to its end; if it was a reply (not a server notification, see
  :func:`~bot.mcp.reply_limit.head_of`) and the stream belongs to a request, an error event for
  that request takes its place and the stream ends there. Events on the server's own stream
  (GET) that are too large are dropped.

Responses are asked for without compression (``Accept-Encoding: identity``): the cap counts
the bytes that are read, and a compressed body would only be bounded before it is unpacked.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator, Mapping

import httpx2
import structlog
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp_types import RequestId

from bot.mcp.line_framing import LineFramer, LongLine, LongLineEnd
from bot.mcp.reply_limit import HEAD_BYTES, MessageKind, head_of, too_large_error

log = structlog.get_logger(__name__)

_DROPPED_HEADERS = ("content-length", "content-encoding", "transfer-encoding")


def capped_http_client(
    url: str, *, server: str, limit: int, headers: Mapping[str, str]
) -> httpx2.AsyncClient:
    """The SDK's client (its timeouts) over a :class:`CappedTransport`. A client given a
    transport reads no proxy settings itself, so the environment's proxy for ``url`` (and
    ``no_proxy``) is looked up here."""
    inner = httpx2.AsyncHTTPTransport(proxy=_environment_proxy(url))
    return httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=CappedTransport(inner, server=server, limit=limit),
    )


def _environment_proxy(url: str) -> str | None:
    parsed = httpx2.URL(url)
    if urllib.request.proxy_bypass(parsed.host):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parsed.scheme) or proxies.get("all")


class CappedTransport(httpx2.AsyncBaseTransport):
    """Wraps ``inner``: no response body of server ``server`` is read past ``limit`` bytes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, server: str, limit: int) -> None:
        self._inner = inner
        self.server = server
        self.limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        upstream = response.stream
        assert isinstance(upstream, httpx2.AsyncByteStream)
        request_id = _request_id(request)
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        body: httpx2.AsyncByteStream
        if content_type == "text/event-stream":
            body = _CappedEvents(upstream, self, request_id)
        else:
            body = _CappedBody(upstream, self, request_id)
        headers = [(k, v) for k, v in response.headers.multi_items() if k not in _DROPPED_HEADERS]
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            # asked for identity: an encoded body is refused rather than unpacked unbounded
            log.warning("mcp_reply_encoded", server=self.server)
            body = _Refused(upstream, self, request_id)
        return httpx2.Response(
            response.status_code, headers=headers, stream=body, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()

    def error_body(self, request_id: RequestId) -> bytes:
        log.warning(
            "mcp_reply_too_large", server=self.server, limit=self.limit, request_id=request_id
        )
        error = too_large_error(request_id, self.limit)
        return error.model_dump_json(by_alias=True, exclude_unset=True).encode()

    def too_large(self) -> httpx2.ReadError:
        log.warning("mcp_reply_too_large", server=self.server, limit=self.limit)
        return httpx2.ReadError(f"reply exceeded {self.limit} bytes; not read")


def _request_id(request: httpx2.Request) -> RequestId | None:
    """The id of the JSON-RPC request a POST carries (our own, small message)."""
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (ValueError, httpx2.RequestNotRead):
        return None
    if not isinstance(message, dict) or "method" not in message:
        return None
    value = message.get("id")
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


class _CappedBody(httpx2.AsyncByteStream):
    """The whole body if it fits in the cap, else the error for the request (or ReadError)."""

    def __init__(
        self, upstream: httpx2.AsyncByteStream, cap: CappedTransport, request_id: RequestId | None
    ) -> None:
        self._upstream, self._cap, self._request_id = upstream, cap, request_id

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = bytearray()
        async for chunk in self._upstream:
            body += chunk
            if len(body) > self._cap.limit:
                del body
                await self._upstream.aclose()
                if self._request_id is None:
                    raise self._cap.too_large()
                yield self._cap.error_body(self._request_id)
                return
        yield bytes(body)

    async def aclose(self) -> None:
        await self._upstream.aclose()


class _Refused(_CappedBody):
    """A body that is not read at all."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        await self._upstream.aclose()
        if self._request_id is None:
            raise self._cap.too_large()
        yield self._cap.error_body(self._request_id)


class _CappedEvents(_CappedBody):
    """Server-sent events passed on whole, each at most the cap."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        limit = self._cap.limit
        framer = LineFramer(limit, head_bytes=HEAD_BYTES)
        lines: list[bytes] = []
        size = 0
        head: bytes | None = None  # the first data of an event over the cap
        carry_cr = False
        async for raw in self._upstream:
            chunk = (b"\r" + raw) if carry_cr else raw
            carry_cr = chunk.endswith(b"\r")
            if carry_cr:
                chunk = chunk[:-1]
            # a line ends at CR, LF or CRLF; none of them can be inside a field
            for item in framer.feed(chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")):
                if isinstance(item, LongLine):
                    head = head if head is not None else _data_of(lines, item.head)
                    lines, size = [], 0
                elif isinstance(item, LongLineEnd):
                    continue  # the event goes on to its blank line
                elif item:
                    size += len(item) + 1
                    if head is None and size > limit:
                        head, lines, size = _data_of(lines, item), [], 0
                    elif head is None:
                        lines.append(item)
                elif head is not None:
                    event_head, head = head, None
                    if self._answers_request(event_head):
                        assert self._request_id is not None
                        data = self._cap.error_body(self._request_id)
                        yield b"event: message\ndata: " + data + b"\n\n"
                        await self._upstream.aclose()
                        return
                elif lines:
                    yield b"\n".join(lines) + b"\n\n"
                    lines, size = [], 0
        if lines and head is None:
            yield b"\n".join(lines) + b"\n"

    def _answers_request(self, data: bytes) -> bool:
        """Whether an oversized event (its first data) replaces the request's answer."""
        if head_of(data).kind is MessageKind.REQUEST:
            log.warning("mcp_message_too_large", server=self._cap.server, limit=self._cap.limit)
            return False
        if self._request_id is None:
            log.warning("mcp_reply_too_large", server=self._cap.server, limit=self._cap.limit)
            return False
        return True


def _data_of(lines: list[bytes], line: bytes) -> bytes:
    """The first ``data:`` value of an event (its JSON message's first bytes)."""
    for candidate in (*lines, line):
        if candidate.startswith(b"data:"):
            return candidate[5:].lstrip(b" ")
    return b""
