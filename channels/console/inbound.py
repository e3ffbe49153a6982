"""Reading the console's stdin without blocking the event loop: lines, and ends of input.

From a terminal, an end of input is a key press (Ctrl-D at the start of a line) and reading
goes on after it; from a pipe or a file it is the end. :class:`StdinReader` tells the two
apart so that ``hatchway chat`` can treat a first Ctrl-D as "finish, then quit" and a
second as "quit now", while piped input simply ends.

Pipes, sockets and terminals are watched by the event loop (``add_reader``) and read with
``os.read`` once they are readable. The descriptor's flags are left alone: on a terminal,
stdin, stdout and stderr are usually one open file, and making it non-blocking would make
every write to stdout liable to fail when the terminal is slow. A regular file or
``/dev/null`` (a service without a terminal) cannot be watched: it is read whole in a thread.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import stat
import termios
from typing import IO

#: How much one read takes; a terminal in canonical mode hands over at most one line.
READ_BYTES = 65536


class StdinReader:
    """Lines from ``stream`` in order, and ``None`` for each end of input.

    Call :meth:`open` on the running loop, then :meth:`next` until :attr:`finished`, and
    :meth:`close` at the end. A last line without a newline is still a line.
    """

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._items: asyncio.Queue[str | None] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._fd: int | None = None
        self._whole: asyncio.Task[None] | None = None
        #: No more input will come (a pipe or file ended, the terminal hung up).
        self.finished = False
        #: Input comes from a terminal: an end of input is a key press, not the end.
        self.terminal = _tty_fd(stream) is not None
        #: The terminal echoes what is typed (so an answer's Enter starts a new line).
        self.echoes = _echoes(stream)

    def open(self) -> None:
        fd = _watchable_fd(self._stream)
        if fd is None:
            # owned: close() cancels it
            self._whole = asyncio.create_task(self._read_whole(), name="console-stdin")
            return
        asyncio.get_running_loop().add_reader(fd, self._readable, fd)
        self._fd = fd

    async def next(self) -> str | None:
        """The next line (without its newline), or ``None`` for an end of input; ``None``
        from then on once :attr:`finished`."""
        if self.finished and self._items.empty():
            return None
        return await self._items.get()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(ValueError, OSError):
                asyncio.get_running_loop().remove_reader(self._fd)
            self._fd = None
        if self._whole is not None:
            self._whole.cancel()

    # -- internals ----------------------------------------------------------------------

    def _readable(self, fd: int) -> None:
        try:
            data = os.read(fd, READ_BYTES)
        except BlockingIOError:
            return  # another reader took it first
        except OSError:
            # EIO: the terminal hung up (its window closed); nothing will come any more
            self._end(permanent=True)
            return
        if data:
            self._feed(self._decoder.decode(data))
        else:
            self._end(permanent=not self.terminal)

    async def _read_whole(self) -> None:
        self._feed(await asyncio.to_thread(self._stream.read))
        self._end(permanent=True)

    def _feed(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._items.put_nowait(line.removesuffix("\r"))

    def _end(self, *, permanent: bool) -> None:
        tail = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        if tail:
            self._items.put_nowait(tail.removesuffix("\r"))
        self._items.put_nowait(None)
        if permanent:
            self.finished = True
            self.close()


def _fd_of(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError):
        return None


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal."""
    return _tty_fd(stream) is not None


def _tty_fd(stream: IO[str]) -> int | None:
    fd = _fd_of(stream)
    return fd if fd is not None and os.isatty(fd) else None


def _watchable_fd(stream: IO[str]) -> int | None:
    """The descriptor when the event loop can watch it: a pipe, a socket or a terminal."""
    fd = _fd_of(stream)
    if fd is None:
        return None
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd) else None


def _echoes(stream: IO[str]) -> bool:
    fd = _tty_fd(stream)
    if fd is None:
        return False
    try:
        return bool(termios.tcgetattr(fd)[3] & termios.ECHO)
    except termios.error:
        return False
