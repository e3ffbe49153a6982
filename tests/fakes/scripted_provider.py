"""A scripted model: a real :class:`bot.providers.base.Provider` whose replies a test writes.

Each ``complete`` call takes the next step of the script: a :class:`ProviderReply` is
returned, an exception is raised, a callable is called with the request (it may be async,
e.g. to wait on an event). Every request is recorded, with whether a stream sink was given.
When the script is exhausted, ``when_exhausted`` is returned if set, else
:class:`bot.errors.ProviderError` is raised (so an unexpected extra call is visible).

Helpers: :func:`reply` builds a reply, :func:`call` a tool call (arguments given as a
mapping are JSON-encoded; a string is passed through raw, so tests can send garbage).
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from bot.errors import ProviderError
from bot.providers.base import CompletionRequest, ProviderReply, StreamSink, ToolCallRequest

Step = (
    ProviderReply
    | BaseException
    | Callable[[CompletionRequest], ProviderReply | Awaitable[ProviderReply]]
)

_ids = itertools.count(1)


def call(
    name: str, arguments: Mapping[str, object] | str | None = None, *, id: str = ""
) -> ToolCallRequest:
    """A tool call; ``id`` defaults to a fresh ``call_N``. Pass ``id=""`` explicitly via
    :class:`ToolCallRequest` to test missing ids."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return ToolCallRequest(id=id or f"call_{next(_ids)}", name=name, arguments=raw)


def reply(text: str = "", *calls: ToolCallRequest) -> ProviderReply:
    return ProviderReply(text=text, tool_calls=tuple(calls), finish_reason="stop")


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    request: CompletionRequest
    streamed: bool


class ScriptedProvider:
    """See the module docstring."""

    name = "scripted"

    def __init__(
        self, script: Iterable[Step] = (), *, when_exhausted: ProviderReply | None = None
    ) -> None:
        self._script: list[Step] = list(script)
        self._when_exhausted = when_exhausted
        self.calls: list[RecordedRequest] = []
        self.closed = False

    @property
    def requests(self) -> list[CompletionRequest]:
        return [c.request for c in self.calls]

    def add(self, *steps: Step) -> None:
        self._script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._script)

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        self.calls.append(RecordedRequest(request=request, streamed=stream is not None))
        if not self._script:
            if self._when_exhausted is not None:
                return self._when_exhausted
            raise ProviderError("script exhausted")
        step = self._script.pop(0)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, ProviderReply):
            result = step
        else:
            produced = step(request)
            result = await produced if inspect.isawaitable(produced) else produced
        if stream is not None and result.text:
            for word in result.text.split(" "):
                await stream(word + " ")
        return result

    async def aclose(self) -> None:
        self.closed = True
