"""A server that dies: ENV_ERROR for the call it was in, a restart with backoff, and calls
working again afterwards; a server that is not up answers every call with ENV_ERROR."""

from __future__ import annotations

import asyncio

import pytest

from bot.config import McpServerConfig
from bot.mcp.connection import McpConnection, ServerState
from bot.tools.spec import ToolEnvironmentError
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import DEMO_SERVER, AppFactory, console_message, demo_config


async def test_server_killed_mid_call_is_env_error_and_restarted(
    start_app: AppFactory, provider: ScriptedProvider
) -> None:
    app, terminal = await start_app({"servers": {"demo": demo_config(requires_approval=False)}})
    connection = app.mcp.connections["demo"]
    provider.add(reply("", call("demo__crash")), reply("the tool server went away"))
    await app.gateway.deliver(console_message("crash it", "m1"))
    await terminal.wait_for("the tool server went away")

    rows = await app.store.db.fetchall(
        "SELECT status, observation FROM tool_calls WHERE tool = 'demo__crash'"
    )
    assert [r["status"] for r in rows] == ["env_error"]
    assert "stopped during the call" in rows[0]["observation"]

    async with asyncio.timeout(60):
        await connection.wait_until(lambda c: c.restarts >= 1 and c.state is ServerState.READY)
    assert connection.state is ServerState.READY

    provider.add(reply("", call("demo__add", {"a": 1, "b": 1})), reply("back: 2"))
    await app.gateway.deliver(console_message("add 1 and 1", "m2"))
    await terminal.wait_for("back: 2")
    rows = await app.store.db.fetchall(
        "SELECT status, observation FROM tool_calls WHERE tool = 'demo__add'"
    )
    assert [(r["status"], r["observation"]) for r in rows] == [("executed", "2")]


async def test_call_while_the_server_is_not_up_is_env_error() -> None:
    connection = McpConnection("demo", McpServerConfig(command=DEMO_SERVER))
    assert connection.state is ServerState.STARTING
    with pytest.raises(ToolEnvironmentError, match="unavailable"):
        await connection.call("add", {"a": 1, "b": 2})


async def test_server_that_cannot_start_keeps_restarting() -> None:
    connection = McpConnection(
        "ghost",
        McpServerConfig(
            command=["/nonexistent/mcp-server"], reconnect_initial_s=0.01, reconnect_max_s=0.02
        ),
    )
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(30):
            await connection.wait_until(lambda c: c.restarts >= 3)
        task.cancel()
    assert connection.state is ServerState.RESTARTING
    with pytest.raises(ToolEnvironmentError):
        await connection.call("anything", {})
