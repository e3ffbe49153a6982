"""A shell command as an owned process group: run it, cap its output, and kill the whole group
(SIGTERM, a grace period, then SIGKILL) on timeout, on cancellation, and when the command
itself exits while background children are still alive.

The command runs in a new session, so its process group id is its pid and every descendant
that does not start its own session is in that group. A descendant that calls ``setsid`` leaves
the group and is out of reach here; the sandbox closes that gap (``wrapper`` is then the
bubblewrap command line, :mod:`bot.tools.builtin.sandbox`: the group is bubblewrap, and when
it ends, its PID namespace and every process in it end too).

Output is bounded while it is read (:class:`OutputCapture` keeps a head and a tail), whatever
the command writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

READ_CHUNK = 65536
POLL_S = 0.02
FIRST_POLL_S = 0.001


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """What a finished (or killed) command produced. ``exit_code`` is None when it was killed
    for its timeout; ``omitted_bytes`` counts output dropped from the middle."""

    exit_code: int | None
    output: str
    timed_out: bool
    omitted_bytes: int
    duration_s: float


class OutputCapture:
    """Keeps the first and the last ``limit // 2`` bytes of a stream, counting the rest."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit - limit // 2
        self._tail_limit = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.omitted = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail += chunk
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            del self._tail[:excess]
            self.omitted += excess

    def text(self) -> str:
        head = self._head.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        if self.omitted:
            return f"{head}\n[… {self.omitted} bytes of output omitted …]\n{tail}"
        return head + tail


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the group; False when no process of it is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # The pgid was recycled by a process we do not own: ours are gone.
        return False
    return True


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in the group. Zombies count as gone: an
    orphaned child waits for init to reap it, which some container inits do slowly."""
    if not _signal_group(pgid, 0):
        return False  # the kernel knows of none: no need to read /proc
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return True
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


async def terminate_group(pgid: int, *, grace_s: float) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for it to vanish, then SIGKILL whatever is
    left. The SIGKILL is sent even if this coroutine is cancelled while it waits."""
    if not _group_alive(pgid):
        # Nothing but zombies (a sandbox's init, which its reaper has not collected yet):
        # no signal to send, no grace period to wait out.
        return
    if not _signal_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + grace_s
    gone = False
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
            if not _group_alive(pgid):
                gone = True
                return
    finally:
        if not gone and _signal_group(pgid, signal.SIGKILL):
            log.info("shell_group_killed", pgid=pgid)


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    max_output_bytes: int,
    grace_s: float = 2.0,
    wrapper: Sequence[str] = (),
) -> CommandResult:
    """Run ``command`` with ``/bin/sh -c`` in ``cwd``, behind ``wrapper`` (programs that set
    things up and then run the rest of their arguments: the sandbox, the limits); stdin is
    empty, stderr joins stdout.

    Returns when the command exited (its leftover background processes are terminated) or
    when ``timeout_s`` passed (the whole group is terminated, ``timed_out`` is set). On
    cancellation the group is terminated and ``CancelledError`` propagates.
    """
    started = time.monotonic()
    argv = [*wrapper, "/bin/sh", "-c", command]
    proc = await _spawn(argv, cwd=cwd, env=env, grace_s=grace_s)
    pgid = proc.pid
    stdout = proc.stdout
    assert stdout is not None
    capture = OutputCapture(max_output_bytes)
    log.info("shell_started", pid=proc.pid)

    async def read_all() -> None:
        while chunk := await stdout.read(READ_CHUNK):
            capture.feed(chunk)

    async def wait_then_reap_group() -> None:
        # Not proc.wait(): on 3.11 it also waits for the pipes to close, which a background
        # child holding stdout delays until it exits; asyncio offers no exit-only event.
        # The first looks come soon (most commands are short), then less often, up to every
        # POLL_S; a growth of a quarter keeps the lateness under a quarter of the run time.
        delay = FIRST_POLL_S
        while proc.returncode is None:
            await asyncio.sleep(delay)
            delay = min(delay * 1.25, POLL_S)
        # The call owns everything it started: background children die with it.
        await terminate_group(pgid, grace_s=grace_s)

    timed_out = False
    try:
        async with asyncio.timeout(timeout_s), asyncio.TaskGroup() as tasks:
            tasks.create_task(read_all())
            tasks.create_task(wait_then_reap_group())
    except TimeoutError:
        timed_out = True
        await terminate_group(pgid, grace_s=grace_s)
        # What the group wrote before it died is still in the pipe.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                await read_all()
    except BaseException:
        await terminate_group(pgid, grace_s=grace_s)
        raise
    finally:
        _close_transport(proc)
    if proc.returncode is None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                await proc.wait()
    duration = time.monotonic() - started
    log.info(
        "shell_finished",
        pid=proc.pid,
        exit_code=proc.returncode,
        timed_out=timed_out,
        duration_ms=round(duration * 1000, 1),
    )
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        output=capture.text(),
        timed_out=timed_out,
        omitted_bytes=capture.omitted,
        duration_s=duration,
    )


async def _spawn(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], grace_s: float
) -> asyncio.subprocess.Process:
    """Start ``argv`` in a new session; a cancellation while it starts still ends it.

    asyncio's spawn awaits the pipes after the process exists, and when cancelled there it
    kills only the shell, not what the shell already started in the background (seen on a
    busy machine: the children outlived the call). So the spawn is shielded, and a cancelled
    start waits for it and terminates the whole group before ``CancelledError`` goes on."""
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):  # a failed start has nothing to end
            proc = await spawning
            await terminate_group(proc.pid, grace_s=grace_s)
            _close_transport(proc)
        raise


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    # asyncio never closes a subprocess transport on its own; an unclosed one warns at GC.
    transport = getattr(proc, "_transport", None)
    if transport is not None and not transport.is_closing():
        transport.close()
