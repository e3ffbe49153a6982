"""An MCP server whose results can be huge, run as a real process (``python huge_server.py``).

Tools: ``huge`` (a text result of ``size`` bytes, made of lines that contain quotes and
newlines, so the JSON line carrying it is escaped like a real one), ``add``, ``notify_huge``
(logs a message of ``size`` bytes to the client before a small result) and ``busy`` (holds the
server's event loop for ``seconds``, as building and sending a huge result does on a slow
machine, so nothing else is answered meanwhile). With ``--http FD``
it serves streamable HTTP on the listening socket it inherits (``tests/mcp/http_process.py``;
server-sent events, or with ``--json`` plain JSON replies).
"""

from __future__ import annotations

import socket
import sys
import time

import uvicorn
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("huge")

_LINE = 'a "quoted" line of a huge result, with a tab\tand more text to fill it up\n'


@server.tool()
def huge(size: int) -> str:
    """Return a text of ``size`` bytes."""
    whole, rest = divmod(size, len(_LINE))
    return _LINE * whole + "x" * rest


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integer numbers."""
    return str(a + b)


@server.tool()
async def notify_huge(size: int, ctx: Context) -> str:
    """Send a log notification of ``size`` bytes, then answer ``done``."""
    await ctx.info("y" * size)
    return "done"


@server.tool()
async def busy(seconds: float) -> str:
    """Answer ``done`` after ``seconds`` in which the server answers nothing else."""
    time.sleep(seconds)  # noqa: ASYNC251 - in the event loop, on purpose
    return "done"


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        listening = socket.socket(fileno=int(sys.argv[2]))  # tests/mcp/http_process.py
        app = server.streamable_http_app(host="127.0.0.1", json_response="--json" in sys.argv[3:])
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])
    else:
        server.run()
