"""Newline-delimited frames from a byte stream, never holding more than a limit.

A stdio MCP server writes one JSON-RPC message per line on stdout and free text on stderr;
both are third-party output of any length. :class:`LineFramer` is fed the chunks as they
are read and returns the complete lines. A line that grows past ``limit`` bytes is reported
once, as a :class:`LongLine` carrying its first bytes, at the moment it crosses the limit
(not when it ends, which may be many megabytes later); the rest of it, up to the next
newline, is counted and dropped. So the memory a framer holds is at most ``limit`` bytes
plus one chunk, whatever the stream carries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line that crossed the limit; ``head`` is its first bytes (at most ``head_bytes``)."""

    head: bytes


class LineFramer:
    """Cut a byte stream into lines of at most ``limit`` bytes (without the newline)."""

    def __init__(self, limit: int, *, head_bytes: int) -> None:
        if limit < 1 or head_bytes < 1:
            raise ValueError("limit and head_bytes must be positive")
        self._limit = limit
        self._head_bytes = min(head_bytes, limit)
        self._buffer = bytearray()
        self._skipping = False
        #: bytes dropped so far as parts of long lines
        self.skipped_bytes = 0

    def feed(self, chunk: bytes) -> list[bytes | LongLine]:
        """The lines (and long-line reports) completed or crossed by ``chunk``."""
        out: list[bytes | LongLine] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._take(chunk[start:] if end < 0 else chunk[start:end], out)
            if end < 0:
                return out
            self._end_line(out)
            start = end + 1

    def finish(self) -> list[bytes | LongLine]:
        """At the end of the stream: the last line if it had no newline."""
        out: list[bytes | LongLine] = []
        if self._buffer or self._skipping:
            self._end_line(out)
        return out

    def _take(self, piece: bytes, out: list[bytes | LongLine]) -> None:
        if self._skipping:
            self.skipped_bytes += len(piece)
            return
        room = self._limit - len(self._buffer)
        if len(piece) <= room:
            self._buffer += piece
            return
        missing = max(0, self._head_bytes - len(self._buffer))
        head = bytes(self._buffer[: self._head_bytes]) + piece[:missing]
        out.append(LongLine(head))
        self.skipped_bytes += len(self._buffer) + len(piece)
        self._buffer = bytearray()  # a new buffer: clear() may keep the allocation
        self._skipping = True

    def _end_line(self, out: list[bytes | LongLine]) -> None:
        if self._skipping:
            self._skipping = False
            return
        out.append(bytes(self._buffer))
        self._buffer = bytearray()
