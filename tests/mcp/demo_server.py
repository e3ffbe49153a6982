"""A tiny MCP server for the tests, run as a real process (``python demo_server.py``).

Tools: ``add``, ``echo``, ``fail`` (answers with a tool error), ``crash`` (the process exits
mid-call), ``has_env`` (whether an environment variable is set, never its value). With
``--http PORT`` it serves streamable HTTP on loopback instead of stdio.
"""

from __future__ import annotations

import os
import sys

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
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
