"""The systemd notification protocol (``sd_notify``), written out by hand.

Under ``Type=notify`` systemd passes ``NOTIFY_SOCKET`` (a filesystem path, or ``@name`` for an
abstract-namespace socket) and, with ``WatchdogSec=``, ``WATCHDOG_USEC`` (and optionally
``WATCHDOG_PID``). :class:`SystemdNotifier` sends newline-separated ``KEY=value`` datagrams:
``READY=1``, ``STOPPING=1``, ``STATUS=…``, ``WATCHDOG=1``. Without ``NOTIFY_SOCKET`` every
method is a no-op, so the daemon runs the same in a terminal.

:func:`watchdog_pings` pings from the event loop at half the watchdog interval: when the loop
is blocked, the pings stop and systemd restarts the service, which is the point.

Sending never raises: a vanished or full socket is logged once and otherwise ignored, because
losing a status line must not take the daemon down.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Mapping, MutableMapping

import structlog

log = structlog.get_logger(__name__)

NOTIFY_VARIABLES = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


def socket_address(value: str) -> str | None:
    """The address to ``sendto`` for a ``NOTIFY_SOCKET`` value: a path, or an abstract
    socket (``@name`` becomes ``\\0name``). None for an unusable value (e.g. ``vsock:``)."""
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None


def watchdog_interval_s(environ: Mapping[str, str], pid: int | None = None) -> float | None:
    """The watchdog interval systemd asked for, in seconds; None when there is none or it
    is meant for another process (``WATCHDOG_PID``)."""
    raw = environ.get("WATCHDOG_USEC", "")
    owner = environ.get("WATCHDOG_PID", "")
    if owner and owner.isdigit() and int(owner) != (os.getpid() if pid is None else pid):
        return None
    if not raw.isdigit() or int(raw) <= 0:
        return None
    return int(raw) / 1_000_000


class SystemdNotifier:
    """Sends state changes to the service manager. Close with :meth:`close`."""

    def __init__(self, address: str | None, *, watchdog_s: float | None = None) -> None:
        self.address = address
        self.watchdog_s = watchdog_s
        self._socket: socket.socket | None = None
        self._warned = False
        if address is not None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.setblocking(False)

    @classmethod
    def from_environ(
        cls, environ: MutableMapping[str, str], *, unset: bool = False
    ) -> SystemdNotifier:
        """Read ``NOTIFY_SOCKET``/``WATCHDOG_*``. With ``unset`` the variables are removed, so
        that child processes (the shell tool) cannot talk to the service manager."""
        address = socket_address(environ.get("NOTIFY_SOCKET", ""))
        watchdog = watchdog_interval_s(environ) if address is not None else None
        if unset:
            for name in NOTIFY_VARIABLES:
                environ.pop(name, None)
        return cls(address, watchdog_s=watchdog)

    @property
    def enabled(self) -> bool:
        return self._socket is not None

    def send(self, **fields: str) -> bool:
        """Send one datagram of ``KEY=value`` lines; True when it was handed to the socket."""
        if self._socket is None or self.address is None or not fields:
            return False
        payload = "\n".join(f"{key}={_one_line(value)}" for key, value in fields.items())
        try:
            self._socket.sendto(payload.encode("utf-8"), self.address)
        except OSError as exc:
            if not self._warned:
                log.warning("sd_notify_failed", error=str(exc))
                self._warned = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send(READY="1", STATUS=status)

    def status(self, status: str) -> bool:
        return self.send(STATUS=status)

    def stopping(self, status: str = "stopping") -> bool:
        return self.send(STOPPING="1", STATUS=status)

    def reloading(self, status: str = "reloading configuration") -> bool:
        # systemd 253+ pairs RELOADING=1 with the monotonic time the reload started.
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.send(RELOADING="1", MONOTONIC_USEC=str(usec), STATUS=status)

    def reloaded(self, status: str) -> bool:
        return self.send(READY="1", STATUS=status)

    def watchdog(self) -> bool:
        return self.send(WATCHDOG="1")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def _one_line(value: str) -> str:
    return value.replace("\n", " ").strip()


async def watchdog_pings(notifier: SystemdNotifier) -> None:
    """Ping ``WATCHDOG=1`` at half the watchdog interval until cancelled; returns at once when
    systemd asked for no watchdog."""
    if notifier.watchdog_s is None or not notifier.enabled:
        return
    period = notifier.watchdog_s / 2
    log.info("watchdog_enabled", interval_s=notifier.watchdog_s)
    while True:
        notifier.watchdog()
        await asyncio.sleep(period)
