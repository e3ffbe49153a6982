"""Newline-delimited frames from a byte stream, never holding more than a limit.

A stdio MCP server writes one JSON-RPC message per line on stdout and free text on stderr;
both are third-party output of any length. :class:`LineFramer` is fed the chunks as they
are read and returns the complete lines. A line that grows past ``limit`` bytes is reported
twice: as a :class:`LongLine` carrying its first bytes at the moment it crosses the limit
(not when it ends, which may be many megabytes later), and as a :class:`LongLineEnd`
carrying its last bytes when its newline comes; what lies between is counted and dropped.
So the memory a framer holds is at most ``limit`` bytes plus one chunk, whatever the stream
carries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line that crossed the limit; ``head`` is its first bytes (at most ``head_bytes``)."""

    head: bytes


@dataclass(frozen=True, slots=True)
class LongLineEnd:
    """The end of a long line; ``tail`` is its last bytes (at most ``tail_bytes``)."""

    tail: bytes


Frame = bytes | LongLine | LongLineEnd


class LineFramer:
    """Cut a byte stream into lines of at most ``limit`` bytes (without the newline)."""

    def __init__(self, limit: int, *, head_bytes: int, tail_bytes: int = 256) -> None:
        if limit < 1 or head_bytes < 1 or tail_bytes < 1:
            raise ValueError("limit, head_bytes and tail_bytes must be positive")
        self._limit = limit
        self._head_bytes = min(head_bytes, limit)
        self._tail_bytes = tail_bytes
        self._buffer = bytearray()
        self._skipping = False
        self._tail = b""
        #: bytes dropped so far as parts of long lines
        self.skipped_bytes = 0

    def feed(self, chunk: bytes) -> list[Frame]:
        """The lines (and long-line reports) completed or crossed by ``chunk``."""
        out: list[Frame] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._take(chunk[start:] if end < 0 else chunk[start:end], out)
            if end < 0:
                return out
            self._end_line(out)
            start = end + 1

    def finish(self) -> list[Frame]:
        """At the end of the stream: the last line if it had no newline."""
        out: list[Frame] = []
        if self._buffer or self._skipping:
            self._end_line(out)
        return out

    def _take(self, piece: bytes, out: list[Frame]) -> None:
        if self._skipping:
            self.skipped_bytes += len(piece)
            self._tail = (self._tail + piece[-self._tail_bytes :])[-self._tail_bytes :]
            return
        room = self._limit - len(self._buffer)
        if len(piece) <= room:
            self._buffer += piece
            return
        missing = max(0, self._head_bytes - len(self._buffer))
        head = bytes(self._buffer[: self._head_bytes]) + piece[:missing]
        out.append(LongLine(head))
        self.skipped_bytes += len(self._buffer) + len(piece)
        self._tail = (bytes(self._buffer[-self._tail_bytes :]) + piece)[-self._tail_bytes :]
        self._buffer = bytearray()  # a new buffer: clear() may keep the allocation
        self._skipping = True

    def _end_line(self, out: list[Frame]) -> None:
        if self._skipping:
            out.append(LongLineEnd(self._tail))
            self._skipping = False
            self._tail = b""
            return
        out.append(bytes(self._buffer))
        self._buffer = bytearray()
