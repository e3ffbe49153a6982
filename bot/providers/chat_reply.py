"""A Chat Completions reply read from its JSON: whole (:func:`reply_from_json`) or streamed
chunk by chunk (:class:`StreamedReply`).

Compatible servers differ from OpenAI's API, and their replies are normalised here as the
SDK's lenient models let them through: a tool call without an id gets one, arguments sent as a
JSON object instead of a string are serialised, ``None`` content becomes ``""``, a missing
finish reason is inferred, a missing model is the configured one, and servers that number
every streamed call 0 still get their calls apart (:func:`_starts_new_call`). A field of the
wrong type counts as missing; a reply that is not a JSON object at all cannot be read.

Usage (:func:`read_usage`): ``prompt_tokens`` counts the cached prompt tokens too
(``prompt_tokens_details.cached_tokens``, or DeepSeek's ``prompt_cache_hit_tokens``); they
are taken out of ``input_tokens`` and counted as cache reads. A reply without a ``usage``
object reports none (``None``; the turn estimates it), even when streamed with
``stream_options.include_usage``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from bot.providers.base import ProviderReply, StreamSink, ToolCallRequest, Usage
from bot.providers.call_id import new_call_id
from bot.providers.retry import AttemptFailed, unreadable_failure
from bot.providers.surrogates import DeltaRepair

JsonObject = dict[str, object]


def raw_arguments(value: object) -> str:
    """Tool-call arguments as raw JSON text, whatever shape the server sent them in."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value if value.strip() else "{}"
    return json.dumps(value, ensure_ascii=False)


def reply_from_json(body: object, *, provider: str, model: str) -> ProviderReply:
    """A non-streamed reply (``chat.completion``); ``model`` is the configured one."""
    if not isinstance(body, dict):
        raise unreadable_failure(provider)
    choices = _list(body.get("choices"))
    if not choices:
        raise AttemptFailed(f"{provider} returned no choices", retryable=True)
    choice = _object(choices[0])
    message = _object(choice.get("message"))
    calls = tuple(
        ToolCallRequest(
            id=_str(call.get("id")) or new_call_id(),
            name=_str(function.get("name")),
            arguments=raw_arguments(function.get("arguments")),
        )
        for call in map(_object, _list(message.get("tool_calls")))
        for function in (_object(call.get("function")),)
    )
    return ProviderReply(
        text=_text(message.get("content")),
        tool_calls=calls,
        usage=read_usage(body.get("usage")),
        finish_reason=_str(choice.get("finish_reason")) or ("tool_calls" if calls else "stop"),
        model=_str(body.get("model")) or model,
    )


class StreamedReply:
    """Builds a reply from ``chat.completion.chunk`` objects as they arrive; text deltas go
    to ``sink`` (lone surrogates repaired across deltas). Tool-call fragments are joined by
    :class:`ToolCallAssembler`. Only the first choice is read."""

    def __init__(self, sink: StreamSink | None) -> None:
        self._sink = sink
        self._text: list[str] = []
        self._repair = DeltaRepair()
        self._calls = ToolCallAssembler()
        self.finish_reason = ""
        self._usage: Usage | None = None
        self._model = ""

    async def add(self, chunk: object) -> None:
        """One streamed chunk."""
        if not isinstance(chunk, dict):
            return
        self._model = _str(chunk.get("model")) or self._model
        self._usage = read_usage(chunk.get("usage")) or self._usage
        for choice in map(_object, _list(chunk.get("choices"))[:1]):
            delta = _object(choice.get("delta"))
            content = _text(delta.get("content"))
            if content:
                self._text.append(content)
                if self._sink is not None and (fresh := self._repair.feed(content)):
                    await self._sink(fresh)
            for part in map(_object, _list(delta.get("tool_calls"))):
                function = _object(part.get("function"))
                index = part.get("index")
                self._calls.add(
                    index if isinstance(index, int) else None,
                    _str(part.get("id")) or None,
                    _str(function.get("name")) or None,
                    function.get("arguments"),
                )
            self.finish_reason = _str(choice.get("finish_reason")) or self.finish_reason

    async def finish(self, *, model: str) -> ProviderReply:
        """The whole reply (``model``: the configured one, if the chunks named none)."""
        if self._sink is not None and (rest := self._repair.flush()):
            await self._sink(rest)
        return ProviderReply(
            text="".join(self._text),
            tool_calls=self._calls.calls(),
            usage=self._usage,
            finish_reason=self.finish_reason,
            model=self._model or model,
        )


@dataclass(slots=True)
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _starts_new_call(slot: _PendingCall, call_id: str | None, name: str | None) -> bool:
    """A fragment opens a new call when it brings a different id, or a name without a
    matching id, to a slot that already has one (servers that number every call 0)."""
    if call_id and slot.id and call_id != slot.id:
        return True
    return bool(name and slot.name and not (call_id and call_id == slot.id))


class ToolCallAssembler:
    """Collects streamed tool-call fragments by index into whole calls.

    Fragments normally continue the call at their index; see :func:`_starts_new_call` for
    servers that number every call 0.
    """

    def __init__(self) -> None:
        self._calls: list[_PendingCall] = []
        self._by_index: dict[int, _PendingCall] = {}

    def add(self, index: int | None, call_id: str | None, name: str | None, args: object) -> None:
        slot = self._by_index.get(index) if index is not None else None
        if slot is None and index is None and not call_id and self._calls:
            slot = self._calls[-1]
        if slot is not None and _starts_new_call(slot, call_id, name):
            slot = None
        if slot is None:
            slot = _PendingCall()
            self._calls.append(slot)
            if index is not None:
                self._by_index[index] = slot
        if call_id:
            slot.id = call_id
        if name and not slot.name:
            slot.name = name
        if isinstance(args, str):
            slot.arguments.append(args)
        elif args is not None:
            slot.arguments = [json.dumps(args, ensure_ascii=False)]

    def calls(self) -> tuple[ToolCallRequest, ...]:
        return tuple(
            ToolCallRequest(
                id=call.id or new_call_id(),
                name=call.name,
                arguments=raw_arguments("".join(call.arguments)),
            )
            for call in self._calls
        )


def read_usage(value: object) -> Usage | None:
    """A Chat Completions ``usage`` object as :class:`Usage` (see the module doc); ``None``
    when there is none."""
    if not isinstance(value, dict):
        return None
    prompt = _int(value.get("prompt_tokens"))
    details = _object(value.get("prompt_tokens_details"))
    cached = _int(details.get("cached_tokens")) or _int(value.get("prompt_cache_hit_tokens"))
    cached = min(cached, prompt)
    return Usage(
        input_tokens=prompt - cached,
        output_tokens=_int(value.get("completion_tokens")),
        cache_read_tokens=cached,
    )


def _text(value: object) -> str:
    """Message content: a string, or the text of a list of content parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_str(_object(part).get("text")) for part in value)
    return ""


def _object(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
