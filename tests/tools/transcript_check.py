"""The history invariant the agent loop and the tool pipeline keep, as a check for tests:
every assistant tool-call message is answered by one tool result per call id, in order."""

from __future__ import annotations

from collections.abc import Sequence

from bot.providers.base import ChatMessage


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
