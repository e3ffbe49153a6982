"""A tiny MCP server for the tests, run as a real process (``python demo_server.py``).

Tools: ``add``, ``echo``, ``fail`` (answers with a tool error), ``crash`` (the process exits
mid-call), ``has_env`` (whether an environment variable is set, never its value). With
``--http FD`` it serves streamable HTTP instead of stdio, on the listening socket it inherits
(``tests/mcp/http_process.py``).
"""

from __future__ import annotations

import os
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integer numbers."""
    return str(a + b)


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ValueError(reason)


@server.tool()
def crash() -> str:
    """Terminate the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def has_env(name: str) -> str:
    """Report whether an environment variable is set (and its length)."""
    value = os.environ.get(name)
    return "missing" if value is None else f"set ({len(value)} chars)"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        listening = socket.socket(fileno=int(sys.argv[2]))
        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listening])
    else:
        server.run()
