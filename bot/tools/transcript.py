"""History messages of one batch: the assistant's tool-call message, then one tool-result
message per call, matched by call id, in the model's order. A result carries its outcome's
images for the rest of the turn; the store never keeps them (:mod:`bot.store.history`)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.providers.base import ChatMessage, ToolCallRequest
from bot.tools.outcome import ToolOutcome


def assistant_message(text: str, calls: Sequence[ToolCallRequest]) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, tool_calls=tuple(calls))


def result_messages(outcomes: Sequence[ToolOutcome]) -> list[ChatMessage]:
    return [
        ChatMessage(
            role="tool",
            content=o.observation,
            tool_call_id=o.call_id,
            name=o.tool,
            images=o.images,
        )
        for o in outcomes
    ]
