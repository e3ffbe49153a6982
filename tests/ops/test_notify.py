"""The sd_notify client against a real unix datagram socket."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.ops.notify import SystemdNotifier, socket_address, watchdog_interval_s, watchdog_pings


@pytest.fixture(params=["path", "abstract"])
def listener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if request.param == "path":
        address = str(tmp_path / "notify.sock")
        sock.bind(address)
    else:
        name = f"hatchway-test-{uuid.uuid4().hex}"
        sock.bind("\0" + name)
        address = "@" + name
    sock.settimeout(10)
    yield sock, address
    sock.close()


def test_sends_key_value_lines(listener: tuple[socket.socket, str]) -> None:
    sock, address = listener
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": address})
    assert notifier.ready("ready: 2 channels\nsecond line")
    assert sock.recv(4096) == b"READY=1\nSTATUS=ready: 2 channels second line"
    assert notifier.stopping("draining")
    assert sock.recv(4096) == b"STOPPING=1\nSTATUS=draining"
    notifier.close()


def test_without_socket_everything_is_a_no_op() -> None:
    notifier = SystemdNotifier.from_environ({})
    assert not notifier.enabled
    assert not notifier.ready("ready")
    assert not notifier.watchdog()


def test_a_vanished_socket_does_not_raise(tmp_path: Path) -> None:
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": str(tmp_path / "gone.sock")})
    assert notifier.enabled
    assert not notifier.status("still running")
    notifier.close()


def test_unset_removes_the_variables_for_child_processes(tmp_path: Path) -> None:
    environ = {"NOTIFY_SOCKET": str(tmp_path / "n"), "WATCHDOG_USEC": "2000000", "PATH": "/bin"}
    notifier = SystemdNotifier.from_environ(environ, unset=True)
    assert environ == {"PATH": "/bin"}
    assert notifier.watchdog_s == 2.0
    notifier.close()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/run/systemd/notify", "/run/systemd/notify"),
        ("@abstract", "\0abstract"),
        ("", None),
        ("vsock:2:1234", None),
    ],
)
def test_socket_address(value: str, expected: str | None) -> None:
    assert socket_address(value) == expected


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "abc"}, None),
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),
    ],
)
def test_watchdog_interval(environ: dict[str, str], expected: float | None) -> None:
    assert watchdog_interval_s(environ) == expected


async def test_watchdog_pings_come_from_the_event_loop(
    listener: tuple[socket.socket, str],
) -> None:
    sock, address = listener
    sock.setblocking(False)
    notifier = SystemdNotifier.from_environ({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"})
    assert notifier.watchdog_s == 0.2
    task = asyncio.create_task(watchdog_pings(notifier))
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(30):
            assert await loop.sock_recv(sock, 64) == b"WATCHDOG=1"
            assert await loop.sock_recv(sock, 64) == b"WATCHDOG=1"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        notifier.close()


async def test_no_watchdog_means_no_pinging_task() -> None:
    notifier = SystemdNotifier(None, watchdog_s=None)
    await watchdog_pings(notifier)  # returns at once
