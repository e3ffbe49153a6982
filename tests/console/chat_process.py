"""``hatchway chat`` as a real subprocess: on a pseudo-terminal, or with piped input.

:class:`ChatProcess` starts ``python -m bot.cli chat`` with a clean environment (the state
directory and the LLM endpoint given, nothing of the test's own ``HATCHWAY_``/``OPENAI_``
variables). On a terminal (:func:`start_on_terminal`) the child is the session leader of a
new pseudo-terminal, which is its controlling terminal, so typing ``^C`` sends it SIGINT and
``^D`` at the start of a line is an end of input, exactly as at a real terminal; stdout and
stderr both go to that terminal, as they would for a person. Everything the terminal shows
is collected; waits take generous timeouts as failure guards only (:func:`guard`: the time
the processes spent waiting for a CPU is not counted).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import sqlite3
import sys
import termios
from collections.abc import AsyncIterator, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0
USER = "ana"
CTRL_C = "\x03"
CTRL_D = "\x04"

_STRIP = ("HATCHWAY_", "OPENAI_", "ANTHROPIC_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def chat_environ(
    state_dir: Path, *, llm_url: str | None, model: str = "gpt-4o-mini"
) -> dict[str, str]:
    """The child's environment; ``llm_url`` None: no provider configured (the embedded
    model, when it is installed)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(_STRIP)}
    if llm_url is not None:
        env.update(OPENAI_BASE_URL=llm_url, HATCHWAY_MODEL=model)
    env.update(
        HATCHWAY_STATE_DIR=str(state_dir),
        USER=USER,
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
        TERM="xterm",
    )
    return env


async def settled(state_dir: Path, *pids: int) -> None:
    """Wait until the chat's inbox has no message left unanswered. An answer is on the
    screen a moment before its turn is marked done; a key pressed in between still finds
    the turn running. The inbox (read from the SQLite file) says when it is not."""
    unfinished = "SELECT COUNT(*) FROM inbox WHERE status IN ('received', 'processing')"
    async with guard(*pids):
        while True:
            with contextlib.closing(sqlite3.connect(state_dir / "hatchway.db")) as db:
                if db.execute(unfinished).fetchone() == (0,):
                    return
            await asyncio.sleep(0.05)


async def admitted(state_dir: Path, count: int, *pids: int) -> None:
    """Wait until the chat's inbox holds ``count`` messages. Piped lines are admitted one
    after the other while the first one's turn already runs: its request can reach the
    model before the last line is in the inbox."""
    async with guard(*pids):
        while True:
            with contextlib.closing(sqlite3.connect(state_dir / "hatchway.db")) as db:
                if db.execute("SELECT COUNT(*) FROM inbox").fetchone() == (count,):
                    return
            await asyncio.sleep(0.05)


def _cpu_wait_s(pid: int) -> float | None:
    """Seconds the main thread of ``pid`` has spent runnable but waiting for a CPU (the
    second field of Linux's ``/proc/PID/schedstat``); None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


@contextlib.asynccontextmanager
async def guard(*pids: int) -> AsyncIterator[None]:
    """A failure guard: ``asyncio.timeout(WAIT_S)`` for the block, moved on by the time these
    processes or this one (which serves the fake model) spent runnable and waiting for a
    CPU, up to ten times ``WAIT_S`` in all. A child that hangs or spins still fails after
    ``WAIT_S``; one that only did not get a CPU is waited for. (On a loaded machine a chat's
    start, about 1.7 s of CPU, got 0.62 s in 125 s: the guard ran out, nothing was wrong.)"""
    loop = asyncio.get_running_loop()
    watched = (os.getpid(), *pids)
    began = loop.time()
    base = {pid: _cpu_wait_s(pid) for pid in watched}
    waited = dict.fromkeys(watched, 0.0)
    async with asyncio.timeout(WAIT_S) as scope:

        async def extend() -> None:
            while True:
                await asyncio.sleep(1.0)
                for pid in watched:
                    now, start = _cpu_wait_s(pid), base[pid]
                    if now is not None and start is not None:
                        waited[pid] = max(waited[pid], now - start)
                starved = min(max(waited.values()), 9 * WAIT_S)
                scope.reschedule(began + WAIT_S + starved)

        extending = asyncio.create_task(extend())
        try:
            yield
        finally:
            extending.cancel()


def _take_terminal() -> None:
    """In the child, after ``setsid``: its stdin (the pty) becomes its controlling
    terminal, and its process group the terminal's foreground group."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class ChatProcess:
    """A running ``hatchway chat``; build with :func:`start_on_terminal` or
    :func:`start_piped`."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int | None) -> None:
        self.proc = proc
        self._master = master
        self._raw = bytearray()
        self._errors = bytearray()  # stderr, when it is collected apart (start_piped)
        self._changed = asyncio.Condition()

    @property
    def raw(self) -> str:
        """Everything shown, as written (terminal line endings, escape sequences)."""
        return self._raw.decode("utf-8", "replace")

    @property
    def errors(self) -> str:
        """What was written to stderr, when collected apart from stdout."""
        return self._errors.decode("utf-8", "replace")

    @property
    def shown(self) -> str:
        """What was shown, with ``\\n`` line endings and without escape sequences."""
        return _ESCAPE.sub("", self.raw.replace("\r\n", "\n")).replace("\r", "")

    async def _collect(self, read: Callable[[], bytes]) -> None:
        """Feed what ``read`` returns until it ends (b"" or an I/O error)."""
        while True:
            try:
                data = await asyncio.to_thread(read)
            except OSError:  # EIO: every holder of the terminal's other side has gone
                data = b""
            async with self._changed:
                self._raw.extend(data)
                self._changed.notify_all()
            if not data:
                return

    async def wait_for(self, needle: str, *, count: int = 1) -> str:
        """Wait until ``needle`` was shown ``count`` times; returns what was shown."""
        try:
            async with self.guard(), self._changed:
                await self._changed.wait_for(lambda: self.shown.count(needle) >= count)
        except TimeoutError:
            raise AssertionError(
                f"timed out waiting for {needle!r}; shown:\n{self.shown}"
            ) from None
        return self.shown

    def type(self, text: str) -> None:
        """Type at the terminal (or write to the pipe)."""
        if self._master is not None:
            os.write(self._master, text.encode())
            return
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())

    async def close_input(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()
        self.proc.stdin.close()

    def guard(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The failure guard (:func:`guard`) of a wait on this process."""
        return guard(self.proc.pid)

    async def wait_exit(self) -> int:
        try:
            async with self.guard():
                return await self.proc.wait()
        except TimeoutError:
            raise AssertionError(f"hatchway chat did not exit; shown:\n{self.shown}") from None


@contextlib.asynccontextmanager
async def start_on_terminal(
    env: dict[str, str], cwd: Path, *args: str
) -> AsyncIterator[ChatProcess]:
    """Run ``hatchway chat`` on a new pseudo-terminal for the block (killed at its end if
    still running)."""
    master, slave = os.openpty()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "chat",
            *args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=str(cwd),
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
    finally:
        os.close(slave)
    chat = ChatProcess(proc, master)
    reading = asyncio.create_task(chat._collect(lambda: os.read(master, 65536)))
    try:
        yield chat
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(reading, WAIT_S)
        os.close(master)


@contextlib.asynccontextmanager
async def start_piped(
    env: dict[str, str], cwd: Path, *args: str, stderr_apart: bool = False
) -> AsyncIterator[ChatProcess]:
    """Run ``hatchway chat`` with stdin, stdout and stderr on pipes (stderr joins stdout,
    unless ``stderr_apart``: then it is collected in :attr:`ChatProcess.errors`)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "chat",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if stderr_apart else asyncio.subprocess.STDOUT,
        env=env,
        cwd=str(cwd),
    )
    chat = ChatProcess(proc, None)
    assert proc.stdout is not None
    readers = [asyncio.create_task(_pump(chat, proc.stdout, chat._raw))]
    if proc.stderr is not None:
        readers.append(asyncio.create_task(_pump(chat, proc.stderr, chat._errors)))
    try:
        yield chat
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await asyncio.gather(*readers)


async def _pump(chat: ChatProcess, stream: asyncio.StreamReader, into: bytearray) -> None:
    while True:
        data = await stream.read(65536)
        async with chat._changed:
            into.extend(data)
            chat._changed.notify_all()
        if not data:
            return
