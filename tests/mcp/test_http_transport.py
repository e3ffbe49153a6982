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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def accepting(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    await writer.wait_closed()
    return True


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        *DEMO_SERVER,
        "--http",
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        async with asyncio.timeout(60):
            # another process: its listening port is the only readiness signal there is
            while not await accepting(port):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
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
