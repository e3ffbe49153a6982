"""Observer events and the bounded execution history."""

from __future__ import annotations

from bot.observe import ExecutionHistory, ToolCallFinished


def finished(tool: str, status: str, duration_s: float, result: str = "ok") -> ToolCallFinished:
    return ToolCallFinished.of(
        tool=tool,
        call_id="c",
        channel="console.main",
        conversation_id="c1",
        turn_id="t",
        status=status,
        synthetic=False,
        duration_s=duration_s,
        result=result,
    )


def test_history_is_bounded_and_counts() -> None:
    history = ExecutionHistory(capacity=3)
    for i in range(5):
        history.tool_finished(finished("a" if i % 2 else "b", "executed", i / 1000))
    stats = history.stats()
    assert stats.calls == 3
    assert stats.by_tool == {"b": 2, "a": 1}
    assert stats.by_status == {"executed": 3}
    assert stats.max_ms == 4.0 and stats.p50_ms == 3.0


def test_event_results_are_scrubbed_before_they_are_cut() -> None:
    secret = "xoxb-1234567890-abcdefghijkl"
    event = finished("a", "executed", 0, result="x" * 494 + " " + secret)
    assert "xoxb" not in event.result and "1234567890" not in event.result


def test_empty_stats() -> None:
    stats = ExecutionHistory().stats()
    assert stats.calls == 0 and stats.p99_ms == 0.0
