"""Lines of a workspace file read by bytes, never by "the file" or "the line".

A file an approved command left behind can be gigabytes, or one line of 256 MB. Here it is
read in pieces of at most :data:`PIECE_BYTES`: what is kept is at most the caller's byte
budget, lines are counted without being held (newlines counted in :data:`COUNT_BYTES`
blocks once the wanted range is read), and the result says what was cut: lines left for a
next read, a single line shown only in part, a count that stopped early.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

PIECE_BYTES = 64 * 1024
COUNT_BYTES = 1024 * 1024
#: The most of a file scanned to count its lines once the wanted ones are read.
COUNT_MAX_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class LineRange:
    """Lines ``first``–``last`` of a file as ``data`` (``last`` below ``first``: none);
    ``total`` its lines (at least that many when not ``counted`` to the end); ``cut_line``,
    the length in bytes of the one line shown only in part (0: none was)."""

    data: bytes
    first: int
    last: int
    total: int
    counted: bool
    cut_line: int


def read_range(handle: BinaryIO, *, start: int, end: int | None, max_bytes: int) -> LineRange:
    """Lines ``start``–``end`` (1-based, inclusive; ``end`` None: to the end) of the file
    open as ``handle``: whole lines only, at most ``max_bytes`` of them, except that a first
    line longer than that is shown cut at ``max_bytes``. The lines after the last one kept
    are counted, not held."""
    picked = bytearray()
    last = start - 1
    cut_line = 0
    number = 0
    for number, head, length in _lines(handle, keep=max_bytes + 1):
        if number < start:
            continue
        if end is not None and number > end:
            break
        if len(picked) + length <= max_bytes:
            picked += head
            last = number
            continue
        if not picked:  # one line longer than the budget: its beginning, said so
            picked += _whole_characters(head[:max_bytes])
            last, cut_line = number, length
        break
    else:
        return LineRange(
            data=bytes(picked), first=start, last=last, total=number, counted=True, cut_line=0
        )
    rest, counted = _count(handle)
    return LineRange(
        data=bytes(picked),
        first=start,
        last=last,
        total=number + rest,
        counted=counted,
        cut_line=cut_line,
    )


def lines_of(handle: BinaryIO, *, line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Each line of ``handle`` as ``(number, its first line_bytes bytes)``: memory bounded
    by ``line_bytes`` whatever the file holds."""
    for number, head, _ in _lines(handle, keep=line_bytes):
        yield number, head


def _lines(handle: BinaryIO, *, keep: int) -> Iterator[tuple[int, bytes, int]]:
    """``(number, first keep bytes, length in bytes)`` of each line, read in pieces."""
    number = 0
    while True:
        head = handle.readline(min(keep, PIECE_BYTES))
        if not head:
            return
        kept = bytearray(head)
        length = len(head)
        while not head.endswith(b"\n"):
            head = handle.readline(PIECE_BYTES)
            if not head:
                break
            length += len(head)
            if len(kept) < keep:
                kept += head[: keep - len(kept)]
        number += 1
        yield number, bytes(kept), length


def _count(handle: BinaryIO) -> tuple[int, bool]:
    """The lines in the rest of ``handle``, and whether it was read to the end (not beyond
    :data:`COUNT_MAX_BYTES`)."""
    newlines = 0
    scanned = 0
    tail = b"\n"
    while scanned < COUNT_MAX_BYTES:
        block = handle.read(COUNT_BYTES)
        if not block:
            return newlines + (tail != b"\n"), True
        newlines += block.count(b"\n")
        scanned += len(block)
        tail = block[-1:]
    return newlines + (tail != b"\n"), not handle.read(1)


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut in two at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # a lead byte: is its character complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data
