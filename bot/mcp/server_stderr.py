"""A stdio MCP server's stderr, logged as data.

Whatever a server prints on stderr is third-party text. It never reaches the daemon's own
log stream as it is (a JSON line printed there would look like one of the daemon's events):
the transport reads the server's stderr through a pipe and :class:`StderrLog` logs each line
as the ``line`` field of one ``mcp_server_stderr`` event, named by ``server``. The JSON (or
console) renderer escapes the field; before that the line loses its terminal escape
sequences (colours, cursor moves, window titles) and every other control or format
character (NUL, bidi overrides, zero-width characters; a tab becomes a space), is cut to
:data:`LINE_CHARS` characters (``cut=true``), and is scrubbed of secrets by the log chain
like every event field.

A server that floods stderr is rate-limited: at most :data:`LINES_PER_WINDOW` lines per
:data:`WINDOW_S` seconds are logged; the rest of a window is counted and reported once as
``mcp_server_stderr_suppressed`` (``lines``), when the window has passed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import anyio
import structlog
from anyio.abc import ByteReceiveStream

from bot.mcp.line_framing import Frame, LineFramer, LongLine, LongLineEnd
from bot.visible_text import is_invisible, without_escapes

log = structlog.get_logger(__name__)

LINE_CHARS = 1000
#: raw bytes of one stderr line held while it is read (the rest of a longer line is dropped)
LINE_BYTES = 8 * 1024
LINES_PER_WINDOW = 20
WINDOW_S = 1.0


def plain_line(raw: bytes) -> str:
    """One stderr line as plain text: decoded (bad UTF-8 replaced), escape sequences and
    control or format characters removed, a tab as a space, trailing blanks dropped."""
    text = without_escapes(raw.decode("utf-8", "replace"))
    if not text.isprintable() or any(is_invisible(c) for c in text):
        text = "".join(_plain_char(c) for c in text)
    return text.rstrip()


def _plain_char(char: str) -> str:
    if char == "\t":
        return " "
    return "" if is_invisible(char) else char


class StderrLog:
    """Logs the stderr lines of server ``server``, rate-limited per window."""

    def __init__(
        self,
        server: str,
        *,
        lines_per_window: int = LINES_PER_WINDOW,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server = server
        self._lines_per_window = lines_per_window
        self._window_s = window_s
        self._clock = clock
        self._window_start = -math.inf
        self._logged = 0
        self._suppressed = 0

    def line(self, raw: bytes, *, cut: bool = False) -> None:
        """Log one line (``cut`` when the reader dropped the rest of it)."""
        text = plain_line(raw)
        if not text:
            return
        now = self._clock()
        if now - self._window_start >= self._window_s:
            self.flush()
            self._window_start = now
            self._logged = 0
        if self._logged >= self._lines_per_window:
            self._suppressed += 1
            return
        self._logged += 1
        if cut or len(text) > LINE_CHARS:
            log.info("mcp_server_stderr", server=self.server, line=text[:LINE_CHARS], cut=True)
        else:
            log.info("mcp_server_stderr", server=self.server, line=text)

    def flush(self) -> None:
        """Report the lines suppressed so far, if any."""
        if self._suppressed:
            log.warning(
                "mcp_server_stderr_suppressed",
                server=self.server,
                lines=self._suppressed,
                window_s=self._window_s,
                limit=self._lines_per_window,
            )
            self._suppressed = 0

    async def pump(self, stream: ByteReceiveStream) -> None:
        """Read ``stream`` (the server's stderr pipe) to its end, logging every line. While
        lines are being suppressed, a quiet window still ends with the report."""
        framer = LineFramer(LINE_BYTES, head_bytes=LINE_BYTES)
        try:
            while True:
                chunk: bytes | None = None
                with anyio.move_on_after(self._window_s if self._suppressed else math.inf):
                    try:
                        chunk = await stream.receive()
                    except (anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                        break
                if chunk is None:
                    self.flush()
                    continue
                self._lines(framer.feed(chunk))
            self._lines(framer.finish())
        finally:
            self.flush()

    def _lines(self, frames: list[Frame]) -> None:
        for frame in frames:
            if isinstance(frame, LongLine):
                self.line(frame.head, cut=True)
            elif not isinstance(frame, LongLineEnd):
                self.line(frame)
