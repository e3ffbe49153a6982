"""The Anthropic provider (Messages API) on the ``anthropic`` SDK.

Mapping rules: the system prompt (plus any ``system`` history message) goes in the ``system``
parameter; assistant tool calls become ``tool_use`` blocks; tool results become ``tool_result``
blocks, and consecutive same-role messages are merged, so a batch of results is one user
message. The API requires ``max_tokens`` and a user message first: the request's or the
config's ``max_tokens`` is always sent, and a placeholder user message is prepended when the
(trimmed) history starts with the assistant. SDK retries are off; see :mod:`bot.providers.retry`.
Images, when the provider takes them (:func:`bot.providers.vision.takes_images`), are
``image`` blocks: before the text of a user message (where the API reads them best), after
the text inside a ``tool_result``. A message without images is mapped exactly as before.
Lone UTF-16 surrogates in the reply and in streamed deltas become U+FFFD
(:mod:`bot.providers.surrogates`).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
from anthropic.types import Message, RawMessageStreamEvent

from bot.config import ProviderConfig
from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ImagePart,
    ProviderReply,
    StreamSink,
    ToolCallRequest,
    Usage,
)
from bot.providers.call_id import new_call_id
from bot.providers.retry import AttemptFailed, Retrier, SdkErrors
from bot.providers.surrogates import DeltaRepair, clean_reply
from bot.providers.vision import takes_images

HISTORY_TRIMMED = "(earlier conversation omitted)"
_TRANSIENT_STREAM_ERRORS = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)
_SDK_ERRORS = SdkErrors(
    api=anthropic.APIError,
    timeout=anthropic.APITimeoutError,
    connection=anthropic.APIConnectionError,
    status=anthropic.APIStatusError,
    unreadable=anthropic.APIResponseValidationError,
)


def _tool_input(arguments: str) -> dict[str, object]:
    """A tool call's raw arguments as the JSON object ``tool_use.input`` must be. Arguments
    that are not an object are kept under ``_raw_arguments`` so the model sees its mistake."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _image(image: ImagePart) -> dict[str, Any]:
    data = base64.b64encode(image.data).decode("ascii")
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": data},
    }


def _blocks(message: ChatMessage, images: bool) -> list[dict[str, Any]]:
    if message.role == "tool":
        content: str | list[dict[str, Any]] = message.content or "(no output)"
        if images and message.images:
            text = {"type": "text", "text": content}
            content = [text, *(_image(image) for image in message.images)]
        return [
            {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": content,
            }
        ]
    blocks: list[dict[str, Any]] = []
    if images and message.images and message.role == "user":
        blocks.extend(_image(image) for image in message.images)
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call.arguments)}
        for call in message.tool_calls
    )
    return blocks


def to_anthropic_request(
    system: str, messages: list[ChatMessage], *, images: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)`` for the Messages API; see the module doc for the rules. With
    ``images``, messages' images are sent too; without, only text."""
    system_parts = [system] if system else []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                system_parts.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, images)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": HISTORY_TRIMMED}]})
    return "\n\n".join(system_parts), out


@dataclass(slots=True)
class _Block:
    kind: str
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    initial_input: object = None


class AnthropicProvider:
    """A :class:`~bot.providers.base.Provider` over the Anthropic Messages API.

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
        self._images = takes_images(config)
        self._client = anthropic.AsyncAnthropic(
            base_url=config.base_url,
            api_key=api_key,
            max_retries=0,
            timeout=config.timeout_s,
        )

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        """One completion, retried as a whole on transient failures."""
        params = self._params(request)
        use_stream = stream is not None or self._config.stream

        async def attempt(sink: StreamSink | None) -> ProviderReply:
            if use_stream:
                return await self._streamed(params, sink)
            message = await self._client.messages.create(stream=False, **params)
            return self._reply(message)

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

    def _params(self, request: CompletionRequest) -> dict[str, Any]:
        system, messages = to_anthropic_request(
            request.system, list(request.messages), images=self._images
        )
        params: dict[str, Any] = {
            "model": self._config.model,
            "messages": messages,
            "max_tokens": request.max_tokens or self._config.max_tokens,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.parameters),
                }
                for tool in request.tools
            ]
        if self._config.temperature is not None:
            params["temperature"] = self._config.temperature
        return params

    def _reply(self, message: Message) -> ProviderReply:
        text: list[str] = []
        calls: list[ToolCallRequest] = []
        for block in message.content:
            if block.type == "text":
                text.append(block.text)
            elif block.type == "tool_use":
                calls.append(
                    ToolCallRequest(
                        id=block.id or new_call_id(),
                        name=block.name,
                        arguments=json.dumps(block.input, ensure_ascii=False),
                    )
                )
        return ProviderReply(
            text="".join(text),
            tool_calls=tuple(calls),
            usage=_usage(message.usage),
            finish_reason=message.stop_reason or "",
            model=message.model or self._config.model,
        )

    async def _streamed(self, params: dict[str, Any], sink: StreamSink | None) -> ProviderReply:
        events = await self._client.messages.create(stream=True, **params)
        blocks: dict[int, _Block] = {}
        repair = DeltaRepair()
        usage = Usage()
        stop_reason = ""
        model = ""
        finished = False
        async with events:
            async for event in events:
                if event.type == "message_start":
                    model = event.message.model
                    usage = _usage(event.message.usage)
                elif event.type == "content_block_start":
                    blocks[event.index] = _start_block(event)
                elif event.type == "content_block_delta":
                    block = blocks.setdefault(event.index, _Block(kind="text"))
                    delta = event.delta
                    if delta.type == "text_delta":
                        block.parts.append(delta.text)
                        if sink is not None and (fresh := repair.feed(delta.text)):
                            await sink(fresh)
                    elif delta.type == "input_json_delta":
                        block.parts.append(delta.partial_json)
                elif event.type == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    usage = _usage(event.usage, usage)
                elif event.type == "message_stop":
                    finished = True
        if not finished:
            raise AttemptFailed(f"{self.name} stream ended early", retryable=True)
        if sink is not None and (rest := repair.flush()):
            await sink(rest)
        ordered = [blocks[i] for i in sorted(blocks)]
        return ProviderReply(
            text="".join("".join(b.parts) for b in ordered if b.kind == "text"),
            tool_calls=tuple(_tool_call(b) for b in ordered if b.kind == "tool_use"),
            usage=usage,
            finish_reason=stop_reason,
            model=model or self._config.model,
        )

    def _status_failure(self, exc: anthropic.APIStatusError) -> AttemptFailed:
        failure = self._retrier.status_failure(
            exc.status_code,
            exc.response.headers,
            detail=str(exc.api_message or ""),
            error_type=exc.type,
        )
        if exc.status_code < 400:
            # An error event inside a streamed 200: its type says whether it is transient.
            return AttemptFailed(
                f"{self.name} reported an error mid-reply",
                retryable=exc.type in _TRANSIENT_STREAM_ERRORS,
            )
        return failure


def _usage(reported: object, before: Usage | None = None) -> Usage:
    """The API's usage (a message's, or a ``message_delta``'s running totals) as
    :class:`Usage`: ``input_tokens`` already leaves the cache's tokens out. A count the
    object does not have (a delta may carry only ``output_tokens``) keeps ``before``'s."""
    base = before or Usage()

    def count(name: str, default: int) -> int:
        value = getattr(reported, name, None)
        return value if isinstance(value, int) else default

    return Usage(
        input_tokens=count("input_tokens", base.input_tokens),
        output_tokens=count("output_tokens", base.output_tokens),
        cache_write_tokens=count("cache_creation_input_tokens", base.cache_write_tokens),
        cache_read_tokens=count("cache_read_input_tokens", base.cache_read_tokens),
    )


def _start_block(event: RawMessageStreamEvent) -> _Block:
    block = getattr(event, "content_block", None)
    kind = getattr(block, "type", "text")
    if kind == "tool_use":
        return _Block(
            kind="tool_use",
            id=getattr(block, "id", "") or "",
            name=getattr(block, "name", "") or "",
            initial_input=getattr(block, "input", None),
        )
    if kind == "text":
        initial = getattr(block, "text", "") or ""
        return _Block(kind="text", parts=[initial] if initial else [])
    return _Block(kind=str(kind))


def _tool_call(block: _Block) -> ToolCallRequest:
    streamed = "".join(block.parts)
    if streamed.strip():
        arguments = streamed
    elif block.initial_input:
        arguments = json.dumps(block.initial_input, ensure_ascii=False)
    else:
        arguments = "{}"
    return ToolCallRequest(id=block.id or new_call_id(), name=block.name, arguments=arguments)
