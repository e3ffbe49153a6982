"""The streamable-HTTP transport against the demo server on loopback."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import AsyncIterator

import pytest

from bot.config import McpConfig, McpServerConfig
from bot.mcp.catalog import McpCatalog
from tests.mcp.conftest import DEMO_SERVER, output
from tests.tools.harness import make_context


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    """The demo server over streamable HTTP, on a loopback port the test holds from the
    start: a client's connection waits in the socket's backlog until the server takes it."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            *DEMO_SERVER,
            "--http",
            str(listening.fileno()),
            pass_fds=[listening.fileno()],
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        await process.wait()


async def test_tools_over_streamable_http(http_server: str) -> None:
    assert sys.executable  # the server runs under this interpreter
    catalog = McpCatalog(
        McpConfig(servers={"web": McpServerConfig(url=http_server, requires_approval=False)})
    )
    context = make_context()
    async with asyncio.TaskGroup() as group:
        task = group.create_task(catalog.run())
        async with asyncio.timeout(60):
            await catalog.wait_ready()
        specs = {s.name: s for s in catalog.specs()}
        assert {"web__add", "web__echo"} <= set(specs)
        assert not specs["web__add"].requires_approval
        handler = specs["web__add"].handler
        assert handler is not None
        assert await handler({"a": 40, "b": 2}, context) == output("web__add", "42")
        task.cancel()
