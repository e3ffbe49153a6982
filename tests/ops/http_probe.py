"""Raw HTTP for malformed-input tests: requests written byte by byte over loopback (so they
can hold what client libraries refuse to send), and the JSON log lines the server writes.

:func:`logged_lines` configures the daemon's real logging into a StringIO (stdlib loggers,
aiohttp's among them, included) and restores the previous configuration afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import structlog

from bot.ops.logs import configure_logging

Header = tuple[str, bytes]


def raw_request(
    method: str,
    path: str | bytes,
    *,
    headers: Sequence[Header] = (),
    body: bytes = b"",
    content_length: bool = True,
) -> bytes:
    """An HTTP/1.1 request with ``Connection: close``; ``Content-Length`` is added for
    ``body`` unless ``content_length`` is false or a header already sets it."""
    target = path if isinstance(path, bytes) else path.encode()
    lines = [method.encode() + b" " + target + b" HTTP/1.1", b"Host: 127.0.0.1"]
    lines += [name.encode() + b": " + value for name, value in headers]
    named = {name.lower() for name, _ in headers}
    if content_length and "content-length" not in named and "transfer-encoding" not in named:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@dataclass(frozen=True, slots=True, kw_only=True)
class RawResponse:
    status: int
    head: bytes
    body: bytes


async def send_raw(port: int, request: bytes) -> RawResponse:
    """Write ``request`` to 127.0.0.1:``port`` and read the answer until the server closes.

    A server may answer (413, 400) before it has read a large body; the write then fails
    with a reset, and the answer already sent is still read.
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        with contextlib.suppress(ConnectionError):
            writer.write(request)
            await writer.drain()
        async with asyncio.timeout(10):
            data = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0]
    return RawResponse(status=int(status_line.split()[1]), head=head, body=body)


class LogLines:
    """The log written so far, as parsed JSON lines."""

    def __init__(self, out: io.StringIO) -> None:
        self._out = out
        self._read = 0

    def new(self) -> list[dict[str, object]]:
        """Lines written since the previous call."""
        text = self._out.getvalue()
        fresh, self._read = text[self._read :], len(text)
        return [json.loads(line) for line in fresh.splitlines() if line.strip()]

    async def settle(self) -> list[dict[str, object]]:
        """:meth:`new` after giving the server a moment to write anything late."""
        await asyncio.sleep(0.05)
        return self.new()


@contextlib.contextmanager
def logged_lines() -> Iterator[LogLines]:
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_config = structlog.get_config()
    out = io.StringIO()
    configure_logging("info", "json", out)
    try:
        yield LogLines(out)
    finally:
        root.handlers, root.level = saved_handlers, saved_level
        structlog.configure(**saved_config)


def assert_one_refusal(lines: Sequence[dict[str, object]], status: int) -> dict[str, object]:
    """Exactly one line, the refusal with ``status``, and no traceback anywhere."""
    assert len(lines) == 1, lines
    (line,) = lines
    assert line["event"] == "http_request_refused", line
    assert line["status"] == status
    assert line["level"] == "warning"
    assert "exception" not in line and "Traceback" not in json.dumps(line)
    return line
