"""Server-sent events read incrementally from a byte stream (the HTML standard's parser).

A streamed Chat Completion is a ``text/event-stream`` body: ``data:`` lines grouped into events
by blank lines. :class:`SseDecoder` takes the body in whatever pieces the network delivers
(an event, a line or a character may be split anywhere, even inside a UTF-8 sequence or
between the CR and LF of a line end) and returns each whole event's data as it completes.

As in the OpenAI SDK's decoder: lines end at CR, LF or CRLF; a line starting with ``:`` is a
comment; ``data`` lines of one event are joined with newlines; one space after the colon is
dropped; ``event``, ``id`` and ``retry`` fields are read but only the event name is kept; a
last event not closed by a blank line when the body ends is not dispatched. Unlike the SDK,
an event with no ``data`` line (a keep-alive ``event: ping``) is not dispatched, as the
standard says, instead of failing as an empty JSON document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    data: str
    event: str = ""


class SseDecoder:
    """Feed it body bytes with :meth:`feed`; it returns the events they complete."""

    __slots__ = ("_data", "_event", "_pending", "_skip_lf")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the pieces of an unfinished line
        self._skip_lf = False  # the last piece ended in CR: an LF starting the next is its pair
        self._data: list[str] = []
        self._event = ""

    def feed(self, piece: bytes) -> list[ServerSentEvent]:
        """The events completed by ``piece``, in order."""
        if self._skip_lf and piece[:1] == b"\n":
            piece = piece[1:]
        self._skip_lf = False
        if not piece:
            return []
        lines = _LINE_END.split(piece)
        rest = lines.pop()  # what follows the last line end ("" when the piece ends one)
        if not lines:  # no line ends here: keep the piece without copying what came before
            self._pending.append(rest)
            return []
        if self._pending:
            lines[0] = b"".join([*self._pending, lines[0]])
        self._pending = [rest] if rest else []
        self._skip_lf = not rest and piece[-1:] == b"\r"
        events: list[ServerSentEvent] = []
        for line in lines:
            # bytes UTF-8 cannot decode become U+FFFD, as a lone surrogate would in the reply
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._data:
                self._event = ""
                return None
            event = ServerSentEvent(data="\n".join(self._data), event=self._event)
            self._data = []
            self._event = ""
            return event
        if line[0] == ":":
            return None
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None
