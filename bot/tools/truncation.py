"""Bounding a tool result to ``max_tool_result_chars``: keep the head and the tail, mark
what was cut, never split a character (surrogate pairs stay whole)."""

from __future__ import annotations

MARKER = "\n…[{cut} characters cut]…\n"


def _is_high_surrogate(ch: str) -> bool:
    return "\ud800" <= ch <= "\udbff"


def _is_low_surrogate(ch: str) -> bool:
    return "\udc00" <= ch <= "\udfff"


def bound_text(text: str, max_chars: int) -> str:
    """``text`` itself when it fits; otherwise head + marker + tail, at most ``max_chars``
    long (for any ``max_chars`` ≥ the marker's length)."""
    if len(text) <= max_chars:
        return text
    marker_room = len(MARKER.format(cut=len(text)))
    room = max(max_chars - marker_room, 0)
    head_len = room * 2 // 3
    tail_len = room - head_len
    head = text[:head_len]
    tail = text[len(text) - tail_len :] if tail_len else ""
    if head and _is_high_surrogate(head[-1]):
        head = head[:-1]
    if tail and _is_low_surrogate(tail[0]):
        tail = tail[1:]
    cut = len(text) - len(head) - len(tail)
    return f"{head}{MARKER.format(cut=cut)}{tail}"
