"""An OpenAI-compatible fake that answers by conversation, not by arrival order.

Concurrent turns reach the model in an order no test controls, so each script is keyed by a
marker the test puts in the user's message: a request is answered with the next item queued
for the first key found in its user messages. Requests with no matching key get a 500, which
makes a stray call visible in the test's assertions.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.openai_server import (
    Hang,
    OpenAIFake,
    RecordedRequest,
    Reply,
    ScriptItem,
    chunk,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Garbage:
    """A 200 answer whose body is not JSON at all."""

    body: str = '{"choices": [ {"message": '


@dataclass(frozen=True, slots=True, kw_only=True)
class Endless:
    """A stream that sends a content delta every ``every_s`` and never finishes."""

    every_s: float = 0.02


Fault = Garbage | Endless


class RoutedOpenAI(OpenAIFake):
    def __init__(self) -> None:
        super().__init__(model="gpt-4o-mini")
        self._routes: dict[str, deque[ScriptItem | Fault]] = defaultdict(deque)
        self.endless_chunks = 0
        self.arrivals: dict[str, int] = defaultdict(int)
        self._changed = asyncio.Condition()

    def answer(self, key: str, *items: ScriptItem | Fault) -> None:
        self._routes[key].extend(items)

    def route_text(self, key: str, text: str) -> None:
        self.answer(key, Reply(text=text))

    def route_tools(self, key: str, calls: Sequence[tuple[str, Mapping[str, object]]]) -> None:
        self.answer(key, Reply(tool_calls=tuple(calls)))

    def route_hang(self, key: str) -> None:
        self.answer(key, Hang())

    async def wait_arrival(self, key: str, count: int = 1, wait_s: float = 120.0) -> None:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: self.arrivals[key] >= count)

    def _key_of(self, body: Mapping[str, object]) -> str | None:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        texts = [
            str(m.get("content"))
            for m in messages
            if isinstance(m, dict) and m.get("role") == "user"
        ]
        # the newest user message decides: older turns of the session are history
        for text in reversed(texts):
            for key in self._routes:
                if key in text:
                    return key
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        key = self._key_of(body)
        if key is not None:
            async with self._changed:
                self.arrivals[key] += 1
                self._changed.notify_all()
            queue = self._routes[key]
            if queue:
                item = queue.popleft()
                if isinstance(item, Garbage):
                    self._record(request, body)
                    return web.Response(text=item.body, content_type="application/json")
                if isinstance(item, Endless):
                    self._record(request, body)
                    return await self._endless(request, item)
                # no await between queueing and the base handler's pop (the body is cached)
                self._script.appendleft(item)
        return await super()._handle(request)

    def _record(self, request: web.Request, body: dict[str, object]) -> None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(RecordedRequest(path=request.path, headers=headers, body=body))

    async def _endless(self, request: web.Request, item: Endless) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        while not self._closing.is_set():
            await response.write(self._sse(chunk(content="and on ", model=self.model)).encode())
            self.endless_chunks += 1
            await asyncio.sleep(item.every_s)
        return response
