"""The well-formedness check used by the property test must itself be able to fail."""

from __future__ import annotations

import pytest

from bot.providers.base import ChatMessage, ToolCallRequest
from tests.tools.transcript_check import well_formed

CALLS = (
    ToolCallRequest(id="a", name="t", arguments="{}"),
    ToolCallRequest(id="b", name="t", arguments="{}"),
)
ASK = ChatMessage(role="assistant", tool_calls=CALLS)
USER = ChatMessage(role="user", content="hi")


def result(call_id: str) -> ChatMessage:
    return ChatMessage(role="tool", content="r", tool_call_id=call_id)


@pytest.mark.parametrize(
    ("messages", "ok"),
    [
        ([USER, ASK, result("a"), result("b")], True),
        ([USER, ASK, result("a")], False),  # one result missing
        ([USER, ASK, result("b"), result("a")], False),  # wrong order
        ([USER, ASK, result("a"), result("a")], False),  # answered twice
        ([USER, result("a")], False),  # orphan result
        ([USER, ASK, USER, result("a"), result("b")], False),  # something in between
        ([USER, ChatMessage(role="assistant", content="x")], True),
    ],
)
def test_well_formed(messages: list[ChatMessage], ok: bool) -> None:
    assert well_formed(messages) is ok
