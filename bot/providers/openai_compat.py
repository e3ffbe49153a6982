"""The OpenAI-compatible provider: OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp.

Built on the ``openai`` SDK with the SDK's own retries off (``max_retries=0``): retries, backoff
and ``Retry-After`` are :mod:`bot.providers.retry`'s job. Replies from compatible servers are
normalised here: a tool call without an id gets one, arguments sent as a JSON object instead of
a string are serialised, ``None`` content next to tool calls becomes ``""``, lone UTF-16
surrogates become U+FFFD in the reply and in streamed deltas (:mod:`bot.providers.surrogates`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from bot.config import ProviderConfig
from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ProviderReply,
    StreamSink,
    ToolCallRequest,
    Usage,
)
from bot.providers.call_id import new_call_id
from bot.providers.retry import AttemptFailed, Retrier, SdkErrors
from bot.providers.surrogates import DeltaRepair, clean_reply

_SDK_ERRORS = SdkErrors(
    api=openai.APIError,
    timeout=openai.APITimeoutError,
    connection=openai.APIConnectionError,
    status=openai.APIStatusError,
    unreadable=openai.APIResponseValidationError,
)


def raw_arguments(value: object) -> str:
    """Tool-call arguments as raw JSON text, whatever shape the server sent them in."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value if value.strip() else "{}"
    return json.dumps(value, ensure_ascii=False)


def to_openai_messages(system: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Our history as Chat Completions messages: the system prompt first, assistant tool calls
    as ``tool_calls``, each result as a ``tool`` message keyed by ``tool_call_id``."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": call.arguments or "{}",
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    return out


# The request body is plain JSON built by :func:`completion_params`, so it is posted as it is:
# ``chat.completions.create`` first walks every message and tool schema against the SDK's
# TypedDicts, which takes about 0.4 ms per history message (80 ms for 200 messages).
CHAT_COMPLETIONS = "/chat/completions"


def completion_params(config: ProviderConfig, request: CompletionRequest) -> dict[str, Any]:
    """The Chat Completions request body (minus ``stream``) for ``request``.

    OpenAI's own API gets ``max_completion_tokens`` (its reasoning models refuse
    ``max_tokens``); compatible servers get the ``max_tokens`` they all understand.
    """
    official = config.base_url is None or "api.openai.com" in config.base_url
    params: dict[str, Any] = {
        "model": config.model,
        "messages": to_openai_messages(request.system, list(request.messages)),
        "max_completion_tokens" if official else "max_tokens": (
            request.max_tokens or config.max_tokens
        ),
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in request.tools
        ]
    if request.response_schema is not None:
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(request.response_schema)},
        }
    if config.temperature is not None:
        params["temperature"] = config.temperature
    return params


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


class _ToolCallAssembler:
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


class OpenAICompatProvider:
    """A :class:`~bot.providers.base.Provider` over the Chat Completions API.

    Owns its HTTP client; :meth:`aclose` releases it.
    """

    def __init__(
        self,
        config: ProviderConfig,
        *,
        name: str,
        api_key: str,
        retrier: Retrier,
    ) -> None:
        self.name = name
        self._config = config
        self._retrier = retrier
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=api_key,
            max_retries=0,
            timeout=config.timeout_s,
        )

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        """One completion, retried as a whole on transient failures (see the module doc)."""
        params = completion_params(self._config, request)
        use_stream = stream is not None or self._config.stream

        async def attempt(sink: StreamSink | None) -> ProviderReply:
            if use_stream:
                return await self._streamed(params, sink)
            response = await self._client.post(
                CHAT_COMPLETIONS, body={**params, "stream": False}, cast_to=ChatCompletion
            )
            return self._reply(response)

        reply = await self._retrier.run(
            attempt,
            stream,
            sdk=_SDK_ERRORS,
            status=self._status_failure,
            timeout_s=self._config.timeout_s,
        )
        return clean_reply(reply)

    async def aclose(self) -> None:
        await self._client.close()

    def _reply(self, response: ChatCompletion) -> ProviderReply:
        if not response.choices:
            raise AttemptFailed(f"{self.name} returned no choices", retryable=True)
        choice = response.choices[0]
        message = choice.message
        calls = tuple(
            ToolCallRequest(
                id=getattr(call, "id", None) or new_call_id(),
                name=getattr(getattr(call, "function", None), "name", None) or "",
                arguments=raw_arguments(
                    getattr(getattr(call, "function", None), "arguments", None)
                ),
            )
            for call in message.tool_calls or ()
        )
        usage = response.usage
        return ProviderReply(
            text=message.content or "",
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.prompt_tokens if usage else 0,
                output_tokens=usage.completion_tokens if usage else 0,
            ),
            finish_reason=choice.finish_reason or ("tool_calls" if calls else "stop"),
            model=response.model or self._config.model,
        )

    async def _streamed(self, params: dict[str, Any], sink: StreamSink | None) -> ProviderReply:
        chunks = await self._client.post(
            CHAT_COMPLETIONS,
            body={**params, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        text: list[str] = []
        repair = DeltaRepair()
        assembler = _ToolCallAssembler()
        finish_reason = ""
        usage = Usage()
        model = ""
        async with chunks:
            async for chunk in chunks:
                model = chunk.model or model
                usage = _chunk_usage(chunk) or usage
                for choice in chunk.choices[:1]:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        if sink is not None and (fresh := repair.feed(delta.content)):
                            await sink(fresh)
                    for part in delta.tool_calls or ():
                        function = part.function
                        assembler.add(
                            getattr(part, "index", None),
                            part.id,
                            function.name if function else None,
                            function.arguments if function else None,
                        )
                    finish_reason = choice.finish_reason or finish_reason
        if not finish_reason:
            raise AttemptFailed(f"{self.name} stream ended early", retryable=True)
        if sink is not None and (rest := repair.flush()):
            await sink(rest)
        return ProviderReply(
            text="".join(text),
            tool_calls=assembler.calls(),
            usage=usage,
            finish_reason=finish_reason,
            model=model or self._config.model,
        )

    def _status_failure(self, exc: openai.APIStatusError) -> AttemptFailed:
        return self._retrier.status_failure(
            exc.status_code, exc.response.headers, detail=str(exc.message)
        )


def _chunk_usage(chunk: ChatCompletionChunk) -> Usage | None:
    usage = chunk.usage
    if usage is None:
        return None
    return Usage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0)
