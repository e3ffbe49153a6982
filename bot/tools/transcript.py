"""History messages of one batch: the assistant's tool-call message, then one tool-result
message per call, matched by call id, in the model's order."""

from __future__ import annotations

from collections.abc import Sequence

from bot.providers.base import ChatMessage, ToolCallRequest
from bot.tools.outcome import ToolOutcome


def assistant_message(text: str, calls: Sequence[ToolCallRequest]) -> ChatMessage:
    return ChatMessage(role="assistant", content=text, tool_calls=tuple(calls))


def result_messages(outcomes: Sequence[ToolOutcome]) -> list[ChatMessage]:
    return [
        ChatMessage(role="tool", content=o.observation, tool_call_id=o.call_id, name=o.tool)
        for o in outcomes
    ]


def well_formed(messages: Sequence[ChatMessage]) -> bool:
    """Every assistant tool-call message is followed by exactly one tool message per call id
    (and nothing else in between); no tool message stands alone."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role == "tool":
            return False
        if message.role == "assistant" and message.tool_calls:
            expected = [c.id for c in message.tool_calls]
            answers = messages[i + 1 : i + 1 + len(expected)]
            if [m.tool_call_id for m in answers if m.role == "tool"] != expected:
                return False
            i += 1 + len(expected)
            continue
        i += 1
    return True
