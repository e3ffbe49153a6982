"""Observer events."""

from __future__ import annotations

from bot.observe import ToolCallFinished


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


def test_event_results_are_scrubbed_before_they_are_cut() -> None:
    secret = "xoxb-1234567890-abcdefghijkl"
    event = finished("a", "executed", 0, result="x" * 494 + " " + secret)
    assert "xoxb" not in event.result and "1234567890" not in event.result
