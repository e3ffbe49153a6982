"""An MCP server that misbehaves on request, for the stop tests (a real process, the ``mcp``
SDK's ``MCPServer`` over stdio).

``python stop_server.py MARKS [flag ...]``: every state the server reaches is appended as one
line to the file ``MARKS`` (``started <pid>``, ``initialising``, ``listed``, ``health_check``,
``in_call``, ``stdin_closed``, ``holder <pid>``), so a test waits for a state instead of
sleeping, and knows which processes must be gone after a stop.

Flags:

- ``slow-init``: never finishes starting (its lifespan waits for ever before it serves).
- ``hang-health``: the first tool listing is answered; every later one (the client's health
  check) never is.
- ``crash-at-start``: exits with status 3 right after ``started``.
- ``ignore-sigterm``: SIGTERM is ignored (only SIGKILL ends it).
- ``linger``: once its stdin closes it keeps running (for :data:`HOLD_S`) instead of exiting.
- ``hold-stdout``: starts a grandchild in a session of its own (out of reach of a kill of
  the server's process group) that keeps the server's stdout open (for :data:`HOLD_S`); its
  pid is written as ``holder <pid>`` so the test can end it.

Tools: ``echo`` and ``sleep`` (marks ``in_call``, then never returns).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import Tool

#: How long ``linger`` and ``hold-stdout`` hold on: longer than any test waits, so a daemon
#: that waits for the server to go away by itself is seen hanging.
HOLD_S = 600


def mark(line: str) -> None:
    with Path(sys.argv[1]).open("a", encoding="utf-8") as marks:
        marks.write(line + "\n")


FLAGS = frozenset(sys.argv[2:])


@asynccontextmanager
async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
    if "slow-init" in FLAGS:
        mark("initialising")
        await asyncio.Event().wait()
    yield


class StopServer(MCPServer):
    """``MCPServer`` whose later tool listings hang with ``hang-health``."""

    listings = 0

    async def list_tools(self) -> list[Tool]:
        self.listings += 1
        if self.listings > 1 and "hang-health" in FLAGS:
            mark("health_check")
            await asyncio.Event().wait()
        tools = await super().list_tools()
        mark("listed")
        return tools


server = StopServer("stop", lifespan=lifespan)


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
async def sleep() -> str:
    """Never return."""
    mark("in_call")
    await asyncio.Event().wait()
    return "unreachable"


def main() -> None:
    mark(f"started {os.getpid()}")
    if "crash-at-start" in FLAGS:
        sys.exit(3)
    if "ignore-sigterm" in FLAGS:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "hold-stdout" in FLAGS:
        holder = subprocess.Popen(
            [sys.executable, "-c", f"import time; time.sleep({HOLD_S})"],
            stdout=sys.stdout,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        mark(f"holder {holder.pid}")
    server.run()
    mark("stdin_closed")
    if "linger" in FLAGS:
        time.sleep(HOLD_S)
    os._exit(0)


if __name__ == "__main__":
    main()
