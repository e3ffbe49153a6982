"""A scripted Anthropic Messages API server on loopback, for tests.

Same script API as :mod:`tests.fakes.openai_server` (``queue_text``, ``queue_tool_calls``,
``queue_error``, ``queue_hang``, ``queue_json``, ``cut_after=N``, ``requests``), answering
``POST /v1/messages`` as JSON or as the SSE event sequence ``message_start`` →
``content_block_start``/``content_block_delta`` (``text_delta``, ``input_json_delta``)/
``content_block_stop`` → ``message_delta`` → ``message_stop``. ``queue_stream(events)`` sends
exact ``(event_type, payload)`` pairs. Requests without ``x-api-key`` or
``Authorization: Bearer`` get 401. ``base_url`` is the origin (the SDK appends ``/v1``).
``usage`` is what every rendered reply reports (:data:`USAGE` unless changed): in the body,
or streamed in ``message_start`` with the output tokens in ``message_delta``, as the API does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from tests.fakes.openai_server import JsonObject, RawStream, Reply, ScriptedServer

#: What a reply reports unless ``AnthropicFake.usage`` says otherwise: 13 input tokens read
#: at the full price, 3 written to the prompt cache, 2 read from it, 5 output tokens.
USAGE: JsonObject = {
    "input_tokens": 13,
    "output_tokens": 5,
    "cache_creation_input_tokens": 3,
    "cache_read_input_tokens": 2,
}


class AnthropicFake(ScriptedServer):
    route = "/v1/messages"

    def __init__(self, *, text_chunk_chars: int = 4, model: str = "claude-fake") -> None:
        super().__init__()
        self.text_chunk_chars = text_chunk_chars
        self.model = model
        self.usage: JsonObject = dict(USAGE)
        self._call_counter = 0

    @property
    def base_url(self) -> str:
        return self.origin

    def queue_stream(
        self, events: Sequence[tuple[str, JsonObject]], *, cut_after: int | None = None
    ) -> None:
        self.queue(RawStream(events=tuple(self._sse(t, p) for t, p in events), cut_after=cut_after))

    def check_auth(self, headers: Mapping[str, str]) -> bool:
        bearer = headers.get("authorization", "")
        return bool(headers.get("x-api-key")) or bearer.lower().startswith("bearer ")

    def error_body(self, status: int, message: str) -> JsonObject:
        kind = {
            401: "authentication_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _next_id(self) -> str:
        self._call_counter += 1
        return f"toolu_fake_{self._call_counter}"

    def render_json(self, reply: Reply, request: JsonObject) -> JsonObject:
        content: list[JsonObject] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.extend(
            {"type": "tool_use", "id": self._next_id(), "name": name, "input": dict(args)}
            for name, args in reply.tool_calls
        )
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": self.usage,
        }

    def render_stream(self, reply: Reply, request: JsonObject) -> list[str]:
        events: list[tuple[str, JsonObject]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_fake",
                        "type": "message",
                        "role": "assistant",
                        "model": self.model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {**self.usage, "output_tokens": 1},
                    },
                },
            )
        ]
        index = 0
        if reply.text:
            events.append(_block_start(index, {"type": "text", "text": ""}))
            size = self.text_chunk_chars
            events.extend(
                _block_delta(index, {"type": "text_delta", "text": reply.text[i : i + size]})
                for i in range(0, len(reply.text), size)
            )
            events.append(_block_stop(index))
            index += 1
        for name, args in reply.tool_calls:
            block = {"type": "tool_use", "id": self._next_id(), "name": name, "input": {}}
            events.append(_block_start(index, block))
            raw = json.dumps(args)
            half = len(raw) // 2
            events.extend(
                _block_delta(index, {"type": "input_json_delta", "partial_json": part})
                for part in (raw[:half], raw[half:])
            )
            events.append(_block_stop(index))
            index += 1
        stop = "tool_use" if reply.tool_calls else "end_turn"
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": self.usage["output_tokens"]},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return [self._sse(t, p) for t, p in events]

    @staticmethod
    def _sse(event_type: str, payload: JsonObject) -> str:
        return f"event: {event_type}\ndata: {json.dumps(payload)}\n\n"


def _block_start(index: int, block: JsonObject) -> tuple[str, JsonObject]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def _block_delta(index: int, delta: JsonObject) -> tuple[str, JsonObject]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _block_stop(index: int) -> tuple[str, JsonObject]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})
