"""An MCP server script run as a process serving streamable HTTP on loopback.

The test binds a listening socket to a port of the system's choosing and hands it to the
server (``--http FD``, inherited file descriptor): no other process can take the port between
choosing it and serving on it, and a client's first connection waits in the socket's backlog
until the server takes it, so nothing polls for readiness.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager


@asynccontextmanager
async def http_process(command: Sequence[str], *extra: str) -> AsyncIterator[str]:
    """Run ``command --http FD *extra`` for the block; yields the server's ``/mcp`` URL."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            *command,
            "--http",
            str(listening.fileno()),
            *extra,
            pass_fds=[listening.fileno()],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        await process.wait()
