"""fit_history: oldest first out, tool calls never separated from their results."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.agent.context_window import MESSAGE_OVERHEAD, estimate_tokens, fit_history
from bot.providers.base import ChatMessage, ToolCallRequest


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str, *call_ids: str) -> ChatMessage:
    calls = tuple(ToolCallRequest(id=c, name="t", arguments="{}") for c in call_ids)
    return ChatMessage(role="assistant", content=text, tool_calls=calls)


def tool(call_id: str, text: str = "result") -> ChatMessage:
    return ChatMessage(role="tool", tool_call_id=call_id, content=text)


def cost(messages: Sequence[ChatMessage]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def test_estimate_is_chars_over_four_plus_overhead() -> None:
    assert estimate_tokens(user("x" * 8)) == 2 + MESSAGE_OVERHEAD
    assert estimate_tokens(user("x" * 9)) == 3 + MESSAGE_OVERHEAD
    call = ToolCallRequest(id="id", name="nm", arguments="{}")
    assert estimate_tokens(ChatMessage(role="assistant", tool_calls=(call,))) == 2 + 4


def test_everything_fits() -> None:
    history = [user("a"), assistant("b"), user("c")]
    assert fit_history(history, 10_000) == history


def test_drops_oldest_first() -> None:
    history = [user("old " * 40), assistant("older reply " * 10), user("new"), assistant("ok")]
    kept = fit_history(history, cost(history[2:]) + 1)
    assert kept == history[2:]


def test_never_separates_a_tool_call_from_its_results() -> None:
    history = [
        user("q1"),
        assistant("", "c1", "c2"),
        tool("c1", "x" * 200),
        tool("c2", "y" * 200),
        assistant("answer"),
        user("q2"),
    ]
    budget = cost(history[3:])  # enough for the second result but not the call group
    kept = fit_history(history, budget)
    assert kept == history[4:]


def test_keeps_the_newest_user_message_and_its_turn_even_over_budget() -> None:
    history = [user("old"), user("x" * 4000), assistant("", "c1"), tool("c1")]
    assert fit_history(history, 10) == history[1:]


def test_orphan_tool_results_are_dropped() -> None:
    history = [tool("lost"), user("hi"), tool("also-lost"), assistant("hello")]
    assert fit_history(history, 10_000) == [user("hi"), assistant("hello")]


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    text = st.text(max_size=60)
    messages: list[ChatMessage] = []
    for turn in range(draw(st.integers(0, 6))):
        messages.append(user(draw(text)))
        for step in range(draw(st.integers(0, 2))):
            ids = [f"t{turn}s{step}c{i}" for i in range(draw(st.integers(1, 3)))]
            messages.append(assistant(draw(text), *ids))
            messages.extend(tool(i, draw(text)) for i in ids)
        if draw(st.booleans()):
            messages.append(assistant(draw(text)))
    if draw(st.booleans()):
        messages.insert(0, tool("orphan"))
    return messages


@settings(max_examples=150, deadline=None)
@given(histories(), st.integers(0, 400))
def test_fit_history_invariants(history: list[ChatMessage], budget: int) -> None:
    kept = fit_history(history, budget)
    clean = [m for m in history if m.tool_call_id != "orphan"]

    # a suffix of the history (orphans aside)
    assert kept == clean[len(clean) - len(kept) :]
    # never starts with a tool result
    assert not kept or kept[0].role != "tool"
    # every tool result answers a call kept before it; every kept call keeps all its results
    open_calls: set[str] = set()
    for message in kept:
        if message.role == "tool":
            assert message.tool_call_id in open_calls
        open_calls |= {c.id for c in message.tool_calls}
    results = {m.tool_call_id for m in kept if m.role == "tool"}
    assert open_calls <= results
    # the newest user message and everything after it are always there
    users = [i for i, m in enumerate(clean) if m.role == "user"]
    if users:
        assert len(kept) >= len(clean) - users[-1]
        # within budget unless only that mandatory tail is kept
        if len(kept) > len(clean) - users[-1]:
            assert cost(kept) <= budget
    else:
        assert cost(kept) <= budget
