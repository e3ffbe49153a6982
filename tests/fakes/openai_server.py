"""A scripted OpenAI-compatible Chat Completions server on loopback, for tests.

Usage::

    async with OpenAIFake() as fake:
        fake.queue_text("hello")                        # one reply, JSON or SSE as requested
        fake.queue_tool_calls([("file_read", {"path": "a.md"})])
        fake.queue_error(429, headers={"Retry-After": "2"})
        fake.queue_hang()                               # never answers (until the fake stops)
        fake.answer_with(rule)                          # rule(body) -> item once the queue is empty
        fake.usage = None                               # replies report no usage from now on
        client = AsyncOpenAI(base_url=fake.base_url, api_key="test", max_retries=0)
        ...
        fake.requests[0].body["messages"]               # every request body, in order

Each request to ``POST /v1/chat/completions`` takes the next queued item. Replies are sent as
JSON, or as an SSE stream of ``chat.completion.chunk`` events ending in ``data: [DONE]`` when
the request has ``"stream": true``. ``cut_after=N`` sends N stream events and then drops the
connection mid-body (a non-streamed request gets its connection dropped with no reply). For
exact control: ``queue_json(body)`` and ``queue_stream(chunks)``, with :func:`chunk` to build
chunks. An unscripted request gets HTTP 500 ``fake script exhausted``, unless a rule was given
with :meth:`ScriptedServer.answer_with` (a bench's model: the reply each request gets is
decided from its body, so many conversations can run at once in any order).

:class:`ScriptedServer` is the API-agnostic machinery, shared with the Anthropic fake.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.loopback import LoopbackFake, LoopbackServer

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    path: str
    headers: Mapping[str, str]
    body: JsonObject
    peer: str = ""  # the client's address and port: requests on one connection share it


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """A reply rendered by the fake in the request's mode (JSON or SSE)."""

    text: str = ""
    tool_calls: tuple[tuple[str, Mapping[str, object]], ...] = ()
    cut_after: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RawJson:
    body: JsonObject
    status: int = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class RawStream:
    """Exactly these SSE events; ``cut_after`` N drops the connection after N of them,
    ``stall_after`` N sends nothing more after N (until the fake stops)."""

    events: tuple[str, ...]
    cut_after: int | None = None
    stall_after: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpError:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Hang:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class Garbled:
    """A 200 that claims to be JSON but is not (a broken proxy): ``text``, or ``raw`` bytes
    (which need not be UTF-8)."""

    text: str = "<html>502 bad gateway</html>"
    raw: bytes | None = None


ScriptItem = Reply | RawJson | RawStream | HttpError | Hang | Garbled

Rule = Callable[[JsonObject], ScriptItem]
"""Decides the reply to a request from its JSON body (see :meth:`ScriptedServer.answer_with`)."""


class ScriptedServer(LoopbackFake):
    """An aiohttp app on 127.0.0.1 (port 0) answering one POST route from a queue.

    Subclasses set ``route`` and implement :meth:`render_json`, :meth:`render_stream` and
    :meth:`error_body`; they may override :meth:`check_auth`.
    """

    route = "/"

    def __init__(self, *, record: bool = True) -> None:
        self.record = record  # a bench serving many thousands of requests keeps none
        self.requests: list[RecordedRequest] = []
        self._script: deque[ScriptItem] = deque()
        self._rule: Rule | None = None
        self._closing = asyncio.Event()
        self._server = LoopbackServer(handler_cancellation=True, shutdown_timeout=1)

    @property
    def origin(self) -> str:
        return self._server.origin

    @property
    def pending(self) -> int:
        """Queued items not yet consumed."""
        return len(self._script)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(self.route, self._handle)
        return app

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        await super().__aexit__(*exc)

    def queue(self, item: ScriptItem) -> None:
        self._script.append(item)

    def answer_with(self, rule: Rule | None) -> None:
        """Answer each request the queue has nothing for with ``rule(body)``."""
        self._rule = rule

    def queue_text(self, text: str, *, cut_after: int | None = None) -> None:
        """A plain answer."""
        self.queue(Reply(text=text, cut_after=cut_after))

    def queue_tool_calls(
        self,
        calls: Sequence[tuple[str, Mapping[str, object]]],
        *,
        text: str = "",
        cut_after: int | None = None,
    ) -> None:
        """An answer calling ``calls`` (name, arguments) in order, with optional text."""
        self.queue(Reply(text=text, tool_calls=tuple(calls), cut_after=cut_after))

    def queue_error(
        self, status: int, headers: Mapping[str, str] | None = None, message: str = "error"
    ) -> None:
        """An HTTP error with the given headers (e.g. ``{"Retry-After": "3"}``)."""
        self.queue(
            HttpError(
                status=status, headers=dict(headers or {}), body=self.error_body(status, message)
            )
        )

    def queue_hang(self) -> None:
        """A request that is never answered; the handler ends when the client gives up."""
        self.queue(Hang())

    def queue_json(self, body: JsonObject, status: int = 200) -> None:
        self.queue(RawJson(body=body, status=status))

    def queue_garbled(self) -> None:
        """A 200 reply whose body is not JSON."""
        self.queue(Garbled())

    # -- subclass hooks --------------------------------------------------------------

    def check_auth(self, headers: Mapping[str, str]) -> bool:
        return True

    def error_body(self, status: int, message: str) -> JsonObject:
        raise NotImplementedError

    def render_json(self, reply: Reply, request: JsonObject) -> JsonObject:
        raise NotImplementedError

    def render_stream(self, reply: Reply, request: JsonObject) -> list[str]:
        raise NotImplementedError

    # -- handler ---------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body: JsonObject = await request.json()
        headers = {k.lower(): v for k, v in request.headers.items()}
        if self.record:
            peer = request.transport.get_extra_info("peername") if request.transport else None
            self.requests.append(
                RecordedRequest(path=request.path, headers=headers, body=body, peer=str(peer or ""))
            )
        if not self.check_auth(headers):
            return web.json_response(self.error_body(401, "missing credentials"), status=401)
        if self._script:
            item = self._script.popleft()
        elif self._rule is not None:
            item = self._rule(body)
        else:
            return web.json_response(self.error_body(500, "fake script exhausted"), status=500)
        if isinstance(item, Hang):
            await self._closing.wait()
            return web.json_response(self.error_body(503, "shutting down"), status=503)
        if isinstance(item, HttpError):
            return web.json_response(item.body, status=item.status, headers=dict(item.headers))
        if isinstance(item, RawJson):
            return web.json_response(item.body, status=item.status)
        if isinstance(item, Garbled):
            if item.raw is not None:
                return web.Response(body=item.raw, content_type="application/json")
            return web.Response(text=item.text, content_type="application/json")
        streamed = bool(body.get("stream"))
        if isinstance(item, RawStream):
            return await self._send_stream(
                request, list(item.events), item.cut_after, item.stall_after
            )
        if streamed:
            return await self._send_stream(request, self.render_stream(item, body), item.cut_after)
        if item.cut_after is not None:
            return self._drop(request)
        return web.json_response(self.render_json(item, body))

    async def _send_stream(
        self,
        request: web.Request,
        events: Sequence[str],
        cut_after: int | None,
        stall_after: int | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for index, event in enumerate(events):
            if cut_after is not None and index >= cut_after:
                return self._drop(request)
            if stall_after is not None and index >= stall_after:
                await self._closing.wait()
                return self._drop(request)
            await response.write(event.encode())
        await response.write_eof()
        return response

    @staticmethod
    def _drop(request: web.Request) -> web.StreamResponse:
        transport = request.transport
        if transport is not None:
            transport.abort()
        raise asyncio.CancelledError  # aiohttp ends the handler quietly on a dropped peer


def chunk(
    *,
    content: str | None = None,
    tool_calls: list[JsonObject] | None = None,
    finish_reason: str | None = None,
    usage: JsonObject | None = None,
    model: str = "fake-model",
) -> JsonObject:
    """One ``chat.completion.chunk`` object for :meth:`OpenAIFake.queue_stream`."""
    delta: JsonObject = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    out: JsonObject = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    if usage is not None:
        out["usage"] = usage
        out["choices"] = []
    return out


#: What every reply reports unless ``OpenAIFake.usage`` says otherwise: 11 prompt tokens of
#: which 4 were read from the prompt cache, 7 completion tokens.
USAGE: JsonObject = {
    "prompt_tokens": 11,
    "completion_tokens": 7,
    "total_tokens": 18,
    "prompt_tokens_details": {"cached_tokens": 4},
}


class OpenAIFake(ScriptedServer):
    """The scripted Chat Completions server (see the module doc). ``base_url`` ends in /v1.

    ``usage`` is the ``usage`` object every rendered reply reports (JSON: in the body; SSE:
    in a last chunk without choices, as ``stream_options.include_usage`` asks); ``None``
    leaves it out, as servers that ignore ``include_usage`` do."""

    route = "/v1/chat/completions"

    def __init__(
        self, *, text_chunk_chars: int = 4, model: str = "fake-model", record: bool = True
    ) -> None:
        super().__init__(record=record)
        self.text_chunk_chars = text_chunk_chars
        self.model = model
        self.usage: JsonObject | None = dict(USAGE)
        self._call_counter = 0

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def queue_stream(
        self,
        chunks: Sequence[JsonObject],
        *,
        cut_after: int | None = None,
        stall_after: int | None = None,
        done: bool = True,
    ) -> None:
        """Exactly these chunks as SSE (then ``[DONE]`` unless ``done=False``); see
        :class:`RawStream` for ``cut_after`` and ``stall_after``."""
        events = [self._sse(c) for c in chunks] + (["data: [DONE]\n\n"] if done else [])
        self.queue(RawStream(events=tuple(events), cut_after=cut_after, stall_after=stall_after))

    def error_body(self, status: int, message: str) -> JsonObject:
        return {"error": {"message": message, "type": "fake_error", "code": status}}

    def _next_id(self) -> str:
        self._call_counter += 1
        return f"call_fake_{self._call_counter}"

    def render_json(self, reply: Reply, request: JsonObject) -> JsonObject:
        message: JsonObject = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._next_id(),
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for name, args in reply.tool_calls
            ]
        body: JsonObject = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return body

    def render_stream(self, reply: Reply, request: JsonObject) -> list[str]:
        chunks: list[JsonObject] = []
        size = self.text_chunk_chars
        for start in range(0, len(reply.text), size):
            chunks.append(chunk(content=reply.text[start : start + size], model=self.model))
        for index, (name, args) in enumerate(reply.tool_calls):
            raw = json.dumps(args)
            third = max(1, len(raw) // 3)
            pieces = [raw[:third], raw[third : 2 * third], raw[2 * third :]]
            head = {
                "index": index,
                "id": self._next_id(),
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            chunks.append(chunk(tool_calls=[head], model=self.model))
            chunks.extend(
                chunk(tool_calls=[{"index": index, "function": {"arguments": p}}], model=self.model)
                for p in pieces
            )
        finish = "tool_calls" if reply.tool_calls else "stop"
        chunks.append(chunk(finish_reason=finish, model=self.model))
        if self.usage is not None:
            chunks.append(chunk(usage=self.usage, model=self.model))
        return [self._sse(c) for c in chunks] + ["data: [DONE]\n\n"]

    @staticmethod
    def _sse(payload: JsonObject) -> str:
        return f"data: {json.dumps(payload)}\n\n"
