"""Message chunking: split a long answer under a platform's size limit.

Splits prefer paragraph, then line, then word boundaries, and never leave a code fence open:
a chunk that ends inside a fenced block closes it, and the next chunk reopens it with the
same language. Every chunk is at most ``limit`` characters.

What counts as a fence is decided here, once, by :func:`fence_opening` and
:meth:`Fence.closed_by`; the platform converters in ``channels/`` use the same two, so the
splitter and the converters never disagree about where code starts and ends. The rule is
CommonMark's, at any indentation: an opening fence is a line of three or more backticks and
an info string without backticks (so ```` ```ls -la``` ```` on a line of its own is inline
code, not a fence), or of three or more tildes and any info string; only a line of the same
character alone, at least as long as the opening run, closes it. A line cut by the splitter
goes on as text in the next chunk, never as a fence opener: in the original it did not start
a line.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

SHORTEST_FENCE = 3  # characters in the shortest fence run
MAX_INFO_CHARS = 20

_OPENING = re.compile(r"\s*(?:(`{3,})([^`]*)|(~{3,})(.*))")
_CLOSING = re.compile(r"\s*(`{3,}|~{3,})\s*")
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_LANGUAGE = re.compile(rf"[\w+#.-]{{1,{MAX_INFO_CHARS}}}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fence:
    """An opening code fence: its backtick or tilde run and the info string after it."""

    marker: str
    info: str

    @property
    def language(self) -> str:
        """The info string when it is one short word (``python``, ``c++``), else ``""``: text
        such as ```` ```ls -la```` is code written on the fence line, not a language."""
        return self.info if _LANGUAGE.fullmatch(self.info) else ""

    def closed_by(self, line: str) -> bool:
        """True when ``line`` closes this fence (its character alone, at least as many)."""
        closing = _CLOSING.fullmatch(line)
        if closing is None:
            return False
        run = closing.group(1)
        return run[0] == self.marker[0] and len(run) >= len(self.marker)

    def close_line(self, limit: int) -> str:
        """The line that closes this fence at a cut: its own marker, unless that alone would
        take more than a quarter of a chunk (then three of its character, which is all Slack
        and Discord look for; the chunk ends there anyway)."""
        return self.marker if len(self.marker) <= limit // 4 else self.marker[:3]

    def reopen_line(self, limit: int) -> str:
        """The line that reopens this fence in the next chunk: the marker and the language,
        never code written on the fence line (it would be repeated in every chunk)."""
        return self.close_line(limit) + self.language


def fence_opening(line: str) -> Fence | None:
    """The fence ``line`` opens, or None when it is not an opening fence line."""
    opening = _OPENING.fullmatch(line)
    if opening is None:
        return None
    marker, info = opening.group(1, 2) if opening.group(1) else opening.group(3, 4)
    return Fence(marker=marker, info=info.strip())


def open_fence(text: str) -> Fence | None:
    """The fence still open at the end of ``text`` (None when every fence is closed)."""
    state: Fence | None = None
    for line in text.split("\n"):
        if state is None:
            state = fence_opening(line)
        elif state.closed_by(line):
            state = None
    return state


class _FenceMap:
    """Which fence the original text is inside at any offset, decided on whole lines: the
    rest of a line cut by the splitter never reopens a fence that line does not open."""

    def __init__(self, text: str) -> None:
        self.starts: list[int] = []
        self.inside: list[Fence | None] = []  # the fence a line opens or belongs to
        self.after: list[Fence | None] = []  # the fence still open after the line
        state: Fence | None = None
        offset = 0
        for line in text.split("\n"):
            self.starts.append(offset)
            offset += len(line) + 1
            if state is None:
                state = fence_opening(line)
                self.inside.append(state)
            else:
                self.inside.append(state)
                state = None if state.closed_by(line) else state
            self.after.append(state)

    def _line(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def line_start(self, offset: int) -> bool:
        return offset == self.starts[self._line(offset)]

    def fence_at(self, offset: int) -> Fence | None:
        """The fence whose code goes on at ``offset``."""
        i = self._line(offset)
        if offset != self.starts[i]:
            return self.inside[i]
        return self.after[i - 1] if i else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """One piece of a split message; ``continues_line`` when its first line is the rest of a
    line cut at the end of the previous piece (so it is not a heading, quote or list item)."""

    text: str
    continues_line: bool


def _open_at_end(piece: str, continues_line: bool) -> Fence | None:
    """The fence open at the end of ``piece``; a first line that continues a cut line is text."""
    return open_fence(piece.partition("\n")[2] if continues_line else piece)


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


def split_chunks(text: str, limit: int) -> list[Chunk]:
    """Split ``text`` into chunks of at most ``limit`` characters, each with its fences closed.

    A chunk that ends inside a fence closes it (by what the chunk itself reads as: the start
    of a line cut in two may look like a fence on its own, its rest never does); the next
    chunk reopens a fence only when the original text really is inside one there.
    """
    if limit < 40:
        raise ValueError("limit must be at least 40 characters")
    fences = _FenceMap(text)
    content_end = len(text.rstrip())
    chunks: list[Chunk] = []
    pos = 0
    while pos < len(text):
        fence = fences.fence_at(pos)
        continues_line = fence is None and not fences.line_start(pos)
        prefix = f"{fence.reopen_line(limit)}\n" if fence else ""
        fits = len(prefix) + len(text) - pos <= limit
        if fits and _open_at_end(prefix + text[pos:], continues_line) is None:
            chunks.append(Chunk(text=prefix + text[pos:], continues_line=continues_line))
            break
        # leave room to close whichever fence may be open at the cut
        window = prefix + text[pos : pos + limit - len(prefix)]
        longest = max((len(run) for run in _FENCE_RUN.findall(window)), default=0)
        reserve = 1 + max(SHORTEST_FENCE, min(longest, limit // 4))
        budget = max(1, limit - len(prefix) - reserve)
        end = pos + _cut_point(text[pos : pos + budget + 1], budget)
        piece = prefix + text[pos:end]
        still_open = _open_at_end(piece, continues_line)
        if still_open is not None:
            piece = piece.rstrip("\n") + "\n" + still_open.close_line(limit)
        else:
            piece = piece.rstrip()
        if piece.strip():
            chunks.append(Chunk(text=piece, continues_line=continues_line))
        if end >= content_end:  # only white space is left
            break
        pos = end
        if fences.fence_at(pos) is None:
            while pos < len(text) and text[pos] == "\n":
                pos += 1
    return chunks or [Chunk(text="", continues_line=False)]
