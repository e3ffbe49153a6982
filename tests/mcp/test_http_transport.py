"""The streamable-HTTP transport against the demo server on loopback."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest

from bot.config import McpConfig, McpServerConfig
from bot.mcp.catalog import McpCatalog
from tests.mcp.conftest import DEMO_SERVER, output
from tests.mcp.http_process import http_process
from tests.tools.harness import make_context


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    async with http_process(DEMO_SERVER) as url:
        yield url


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
