"""Reading what ``stop_server.py`` writes: the states it reached and its processes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

STOP_SERVER = Path(__file__).with_name("stop_server.py")
WAIT_S = 120.0  # failure guard only


def stop_server_command(marks: Path, *flags: str) -> list[str]:
    return [sys.executable, str(STOP_SERVER), str(marks), *flags]


class Marks:
    """The lines a stop server appends to its marks file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []

    def pids(self, what: str) -> list[int]:
        """The pids of the ``started`` servers, or of their stdout ``holder`` grandchildren."""
        return [int(line.split()[1]) for line in self.lines() if line.startswith(what + " ")]

    async def wait_for(self, line: str) -> None:
        async with asyncio.timeout(WAIT_S):
            while line not in self.lines():  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def reaped(pid: int) -> bool:
    """Whether process ``pid`` is gone entirely (exited and waited for)."""
    return not Path(f"/proc/{pid}").exists()
