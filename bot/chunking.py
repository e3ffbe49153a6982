"""Message chunking: split a long answer under a platform's size limit.

Splits prefer paragraph, then line, then word boundaries, and never leave a code fence open:
a chunk that ends inside a fenced block closes it, and the next chunk reopens it with the
same info string. Every chunk is at most ``limit`` characters.
"""

from __future__ import annotations

FENCE = "```"
MAX_INFO_CHARS = 20


def _cut_point(text: str, limit: int) -> int:
    """The best index <= limit at which to cut ``text``."""
    if len(text) <= limit:
        return len(text)
    window = text[:limit]
    for sep in ("\n\n", "\n", " "):
        idx = window.rfind(sep)
        if idx > limit // 4:
            return idx + len(sep)
    return limit


def _open_fence(chunk: str, opened: str | None) -> str | None:
    """The info line of the fence still open at the end of ``chunk`` (or None)."""
    state = opened
    for line in chunk.split("\n"):
        stripped = line.strip()
        if stripped.startswith(FENCE):
            state = None if state is not None else stripped
    return state


def _reopener(fence_line: str) -> str:
    """The line that reopens a fence in the next chunk: the opener itself when it is a short
    info line (```python), else the bare marker. Repeating a long opener (code written on the
    fence line itself) would leave no room in the next chunk and split it a character at a
    time, past the limit."""
    return fence_line if len(fence_line) <= len(FENCE) + MAX_INFO_CHARS else FENCE


def split_message(text: str, limit: int) -> list[str]:
    """Split ``text`` into chunks of at most ``limit`` characters without breaking fences."""
    if limit < 40:
        raise ValueError("limit must be at least 40 characters")
    if not text:
        return [""]
    chunks: list[str] = []
    rest = text
    fence: str | None = None  # fence line open at the start of ``rest``
    while rest:
        prefix = f"{fence}\n" if fence else ""
        budget = limit - len(prefix)
        # reserve room to close a fence that may be open at the cut
        reserve = len(FENCE) + 1
        if len(prefix) + len(rest) <= limit and _open_fence(prefix + rest, None) is None:
            chunks.append(prefix + rest)
            break
        cut = _cut_point(rest, max(1, budget - reserve))
        body = rest[:cut]
        rest = rest[cut:]
        piece = prefix + body
        still_open = _open_fence(piece, None)
        if still_open is not None:
            piece = piece.rstrip("\n") + "\n" + FENCE
            fence = _reopener(still_open)
        else:
            fence = None
        piece = piece.rstrip() if still_open is None else piece
        if piece.strip():
            chunks.append(piece)
        if not rest.strip():
            break
        rest = rest.lstrip("\n") if fence is None else rest
    return chunks or [""]
