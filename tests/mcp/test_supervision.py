"""A server that dies: ENV_ERROR for the call it was in, a restart with backoff, and calls
working again afterwards; a server that is not up answers every call with ENV_ERROR. A stop,
in any state of a server that ignores everything but SIGKILL, ends the supervision with the
server gone and nothing restarted (the whole daemon's case is tests/ops/test_stop_matrix.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
from pathlib import Path

import pytest
import structlog

import bot.mcp.connection as connection_module
from bot.config import McpServerConfig
from bot.mcp.connection import McpConnection, ServerState
from bot.tools.spec import ToolEnvironmentError
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import DEMO_SERVER, AppFactory, console_message, demo_config, output
from tests.mcp.http_process import http_process
from tests.mcp.stop_marks import WAIT_S, Marks, alive, reaped, stop_server_command

HUGE_SERVER = [sys.executable, str(Path(__file__).with_name("huge_server.py"))]


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
    assert [(r["status"], r["observation"]) for r in rows] == [
        ("executed", output("demo__add", "2"))
    ]


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
    assert connection.state is ServerState.STOPPED
    with pytest.raises(ToolEnvironmentError, match="stopping"):
        await connection.call("anything", {})


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_call_that_keeps_the_server_busy_is_not_cut_off_by_the_idle_check(
    transport: str,
) -> None:
    """The server answers nothing else for 2 s while the call runs, ten times the check's
    interval: the check waits for the call, which answers, and nothing is restarted. The
    check ended the session (and the call with it) when it waited 0.2 s for a listing during
    a call; so it did at the default 15 s / 10 s for a 40 MB reply on a loaded machine."""
    async with contextlib.AsyncExitStack() as stack:
        if transport == "stdio":
            table: dict[str, object] = {"command": HUGE_SERVER}
        else:
            table = {"url": await stack.enter_async_context(http_process(HUGE_SERVER))}
        connection = McpConnection("busy", McpServerConfig(**table, ping_interval_s=0.2))
        async with asyncio.TaskGroup() as group:
            task = group.create_task(connection.run())
            async with asyncio.timeout(60):  # failure guard
                await connection.wait_ready()
                result = await connection.call("busy", {"seconds": 2.0})
                after = await connection.call("add", {"a": 40, "b": 2})
            task.cancel()
    assert [getattr(b, "text", None) for b in result.content] == ["done"]
    assert [getattr(b, "text", None) for b in after.content] == ["42"]
    assert connection.restarts == 0


# -- stopping: a cancellation is never a server failure ----------------------------------------

#: a server that ignores both the end of its stdin and SIGTERM: only SIGKILL ends it
HOSTILE = ("ignore-sigterm", "linger")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "state", "ping_interval_s"),
    [
        pytest.param(("slow-init", *HOSTILE), "initialising", 15.0, id="starting"),
        pytest.param(("hang-health",), "health_check", 2.0, id="health-check-hanging"),
        # the health check timed out and the transport is shutting the server down: a stop
        # landing here used to interrupt that shutdown and wait for the server for ever
        pytest.param(("hang-health", *HOSTILE), "stdin_closed", 0.5, id="shutting-down"),
    ],
)
async def test_a_stop_in_any_state_stops_the_server_and_restarts_nothing(
    tmp_path: Path, flags: tuple[str, ...], state: str, ping_interval_s: float
) -> None:
    marks = Marks(tmp_path / "marks")
    config = McpServerConfig(
        command=stop_server_command(marks.path, *flags),
        ping_interval_s=ping_interval_s,
        reconnect_initial_s=0.05,
        reconnect_max_s=0.1,
    )
    connection = McpConnection("bad", config)
    task = asyncio.create_task(connection.run())
    try:
        await marks.wait_for(state)
        restarts = connection.restarts
        task.cancel()
        async with asyncio.timeout(WAIT_S):  # failure guard
            with pytest.raises(asyncio.CancelledError):
                await task
        assert connection.state is ServerState.STOPPED
        assert connection.restarts == restarts
        servers = marks.pids("started")
        assert [pid for pid in servers if alive(pid)] == []
    finally:
        for pid in marks.pids("started"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_a_server_backing_off_is_not_started_again_by_a_stop(tmp_path: Path) -> None:
    marks = Marks(tmp_path / "marks")
    config = McpServerConfig(
        command=stop_server_command(marks.path, "crash-at-start"),
        reconnect_initial_s=60.0,
        reconnect_max_s=60.0,
    )
    connection = McpConnection("bad", config)
    task = asyncio.create_task(connection.run())
    async with asyncio.timeout(WAIT_S):
        await connection.wait_until(lambda c: c.restarts == 1)
    task.cancel()
    async with asyncio.timeout(WAIT_S):  # failure guard
        with pytest.raises(asyncio.CancelledError):
            await task
    assert connection.state is ServerState.STOPPED
    assert len(marks.pids("started")) == 1


@pytest.mark.slow
# An abandoned shutdown never closes the server's pipes and subprocess transport: that is the
# price of the last resort, and their ResourceWarnings are expected here (collected below).
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_shutdown_past_its_grace_is_abandoned_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection_module, "STOP_GRACE_S", 0.3)
    marks = Marks(tmp_path / "marks")
    config = McpServerConfig(command=stop_server_command(marks.path, *HOSTILE))
    connection = McpConnection("bad", config)
    task = asyncio.create_task(connection.run())
    async with asyncio.timeout(WAIT_S):
        await connection.wait_ready()
    with structlog.testing.capture_logs() as logs:
        task.cancel()
        async with asyncio.timeout(WAIT_S):  # failure guard
            with pytest.raises(asyncio.CancelledError):
                await task
    assert [e["event"] for e in logs if e["event"].startswith("mcp_server_stop")] == [
        "mcp_server_stop_timeout"
    ]
    # the supervision left behind ends once the server is gone
    for pid in marks.pids("started"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    left = [t for t in asyncio.all_tasks() if t.get_name() == "mcp-supervisor:bad"]
    async with asyncio.timeout(WAIT_S):
        await asyncio.wait(left)
        while not all(reaped(pid) for pid in marks.pids("started")):  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # until the event loop's child watcher has reaped it
    del left, task
    gc.collect()
