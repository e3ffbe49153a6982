"""``hatchway run`` as a real subprocess, with a fake ``NOTIFY_SOCKET`` the test reads.

:class:`DaemonProcess` starts ``python -m bot.cli run --config …`` with a clean environment,
collects the JSON log events from stderr, the console channel's lines from stdout and the
sd_notify datagrams, and offers waits on each. Start-up is slow on a loaded machine (the
provider SDKs take seconds to import), so waits default to generous timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120.0
USER = "tester"

Event = dict[str, Any]

_STRIP = (
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "HATCHWAY_",
    "OPENAI_",
    "ANTHROPIC_",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


def daemon_environ(
    notify_address: str, *, watchdog_usec: int | None, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The test's environment without what would steer the daemon (``_STRIP``), plus the
    notify socket and ``extra`` (e.g. ``HATCHWAY_CRASH_AT``, which the strip removes)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_STRIP)}
    env.update(
        NOTIFY_SOCKET=notify_address,
        USER=USER,
        NO_PROXY="127.0.0.1,localhost",
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    if watchdog_usec is not None:
        env["WATCHDOG_USEC"] = str(watchdog_usec)
    env.update(extra or {})
    return env


class NotifyListener:
    """A unix datagram socket standing in for systemd's notification socket."""

    def __init__(self, path: Path | None) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        if path is None:
            name = f"hatchway-test-{uuid.uuid4().hex}"
            self.sock.bind("\0" + name)
            self.address = "@" + name
        else:
            self.sock.bind(str(path))
            self.address = str(path)
        self.messages: list[dict[str, str]] = []
        self.changed = asyncio.Event()

    async def read_forever(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            data = await loop.sock_recv(self.sock, 4096)
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.messages.append(fields)
            self.changed.set()

    def close(self) -> None:
        self.sock.close()


class DaemonProcess:
    """A running daemon; build with :func:`start_daemon`."""

    def __init__(self, proc: asyncio.subprocess.Process, notify: NotifyListener) -> None:
        self.proc = proc
        self.notify = notify
        self.events: list[Event] = []
        self.stdout: list[str] = []
        self._changed = asyncio.Condition()

    async def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        async for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").strip()
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "raw", "line": line}
            async with self._changed:
                self.events.append(event)
                self._changed.notify_all()

    async def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            async with self._changed:
                self.stdout.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._changed.notify_all()

    async def wait_until(self, check: Callable[[], bool], what: str) -> None:
        try:
            async with asyncio.timeout(WAIT_S), self._changed:
                await self._changed.wait_for(check)
        except TimeoutError:
            tail = "\n".join(json.dumps(e) for e in self.events[-30:])
            raise AssertionError(f"timed out waiting for {what}; last events:\n{tail}") from None

    async def wait_event(self, name: str, start: int = 0) -> Event:
        def found() -> bool:
            return any(e.get("event") == name for e in self.events[start:])

        await self.wait_until(found, f"event {name!r}")
        return next(e for e in self.events[start:] if e.get("event") == name)

    async def wait_stdout(self, needle: str) -> None:
        await self.wait_until(lambda: any(needle in line for line in self.stdout), repr(needle))

    async def wait_notify(
        self, key: str, value: str | None = None, count: int = 1
    ) -> dict[str, str]:
        """The first datagram carrying ``key`` (``=value``), once ``count`` of them arrived."""

        def matches() -> list[dict[str, str]]:
            return [
                m for m in self.notify.messages if key in m and (value is None or m[key] == value)
            ]

        try:
            async with asyncio.timeout(WAIT_S):
                while len(matches()) < count:
                    self.notify.changed.clear()
                    await self.notify.changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"timed out waiting for {key}; datagrams: {self.notify.messages}"
            ) from None
        return matches()[0]

    async def port(self) -> int:
        return int((await self.wait_event("http_listening"))["port"])

    async def get(self, path: str) -> tuple[int, str]:
        port = await self.port()
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}{path}") as response,
        ):
            return response.status, await response.text()

    async def send_line(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((text + "\n").encode())
        await self.proc.stdin.drain()

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    async def wait_exit(self) -> int:
        async with asyncio.timeout(WAIT_S):
            return await self.proc.wait()


@contextlib.asynccontextmanager
async def start_daemon(
    config: Path,
    *extra_args: str,
    notify_path: Path | None = None,
    watchdog_usec: int | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[DaemonProcess]:
    """Run the daemon for the block; it is killed at the end if it is still running.
    ``env``: variables set for the daemon only."""
    notify = NotifyListener(notify_path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "run",
        "--config",
        str(config),
        *extra_args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=daemon_environ(notify.address, watchdog_usec=watchdog_usec, extra=env),
        cwd=str(config.parent),
    )
    daemon = DaemonProcess(proc, notify)
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(daemon._pump_stderr()),
                group.create_task(daemon._pump_stdout()),
                group.create_task(notify.read_forever()),
            ]
            try:
                yield daemon
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                for task in tasks:
                    task.cancel()
    finally:
        notify.close()
