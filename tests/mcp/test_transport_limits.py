"""A huge MCP result is capped while it is read, over stdio and over streamable HTTP (server-
sent events and plain JSON): the model is told the reply exceeded the cap, the next call on
the same connection works, and the daemon's peak memory barely moves. Real servers
(``huge_server.py`` with the ``mcp`` SDK, ``huge_raw_server.py`` by hand) in processes of
their own."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent
from pydantic import ValidationError

from bot.config import McpServerConfig
from bot.mcp.connection import McpCallFailed, McpConnection, ServerState
from bot.mcp.http_limits import capped_http_client
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.mcp.conftest import AppFactory, console_message, output
from tests.mcp.http_process import http_process

HERE = Path(__file__).parent
HUGE = [sys.executable, str(HERE / "huge_server.py")]
RAW = [sys.executable, str(HERE / "huge_raw_server.py")]
CAP = 1_048_576
CAPPED = f"exceeded {CAP} bytes (max_result_bytes) and was not read"
MIB = 1024 * 1024
#: Failure guards only (and the calls' time limit). At a load average of 28 the 40 MB call
#: over events took 36 s, past the fake channel's default 30 s wait, and a whole
#: peak-memory run 93 s.
WAIT_S = 300.0

pytestmark = pytest.mark.slow


@pytest.fixture(params=["stdio", "sse", "json"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """The transport, and the server's table in ``[mcp.servers]``."""
    transport: str = request.param
    # the call's own time limit is not what these tests are about
    common = {"requires_approval": False, "call_timeout_s": WAIT_S}
    if transport == "stdio":
        yield transport, {"command": HUGE, **common}
        return
    async with http_process(HUGE, *(["--json"] if transport == "json" else [])) as url:
        yield transport, {"url": url, **common}


@pytest.mark.parametrize("size", [5_000_000, 40_000_000])
async def test_a_huge_result_is_a_failed_call_that_names_the_cap(
    start_app: AppFactory,
    provider: ScriptedProvider,
    served: tuple[str, dict[str, Any]],
    size: int,
) -> None:
    app, terminal = await start_app({"servers": {"huge": served[1]}})
    provider.add(reply("", call("huge__huge", {"size": size})), reply("that was too much"))
    await app.gateway.deliver(console_message("fetch everything", "m1"))
    await terminal.wait_for("that was too much", within_s=WAIT_S)
    provider.add(reply("", call("huge__add", {"a": 2, "b": 3})), reply("sum: 5"))
    await app.gateway.deliver(console_message("add 2 and 3", "m2"))
    await terminal.wait_for("sum: 5", within_s=WAIT_S)

    rows = await app.store.db.fetchall(
        "SELECT tool, status, observation FROM tool_calls ORDER BY id"
    )
    assert [(r["tool"], r["status"]) for r in rows] == [
        ("huge__huge", "executed"),
        ("huge__add", "executed"),
    ]
    assert rows[0]["observation"].startswith("McpCallFailed: ")
    assert CAPPED in rows[0]["observation"]
    assert rows[1]["observation"] == output("huge__add", "5")
    # what the model read next, and a connection that never restarted
    seen = [m.content for m in provider.requests[1].messages if m.role == "tool"]
    assert CAPPED in seen[-1]
    assert app.mcp.connections["huge"].restarts == 0


@pytest.mark.parametrize("transport", ["stdio", "sse", "json"])
async def test_peak_memory_stays_bounded_for_a_40_mb_reply(transport: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HERE / "huge_reader.py"),
        transport,
        str(40_000_000),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "NO_PROXY": "127.0.0.1"},
    )
    async with asyncio.timeout(WAIT_S):
        out, _ = await process.communicate()
    assert process.returncode == 0
    report = json.loads(out.decode().strip().splitlines()[-1])
    assert CAPPED in report["outcome"]
    assert report["next"] == "42"
    assert report["restarts"] == 0
    # the reply is 40 MB; reading it whole peaked ~130-170 MB above the start before
    growth = (report["after_kib"] - report["before_kib"]) * 1024
    assert growth < 30 * MIB, f"peak RSS grew {growth / MIB:.1f} MiB"


async def test_a_result_under_the_cap_is_read_whole(served: tuple[str, dict[str, Any]]) -> None:
    """Many chunks of one line make one message. (The cap counts the message: this server
    sends the text escaped, and twice, as text and as structured content.)"""
    config = McpServerConfig(**served[1], max_result_bytes=3 * MIB)
    connection = McpConnection("huge", config)
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(WAIT_S):
            await connection.wait_ready()
            result = await connection.call("huge", {"size": MIB})
            with pytest.raises(McpCallFailed, match=f"exceeded {3 * MIB} bytes"):
                await connection.call("huge", {"size": 4 * MIB})
        task.cancel()
    text = result.content[0]
    assert isinstance(text, TextContent)
    assert len(text.text) == MIB


async def test_an_oversized_notification_is_dropped_and_the_call_answers(
    served: tuple[str, dict[str, Any]],
) -> None:
    """A server's own message over the cap (here a log notification sent during the call)
    is dropped; the call's small result still arrives."""
    received: list[object] = []

    async def on_log(params: object) -> None:
        received.append(params)

    transport, table = served
    if transport == "stdio":
        connection = McpConnection("huge", McpServerConfig(**table))
        async with asyncio.TaskGroup() as group:
            task = group.create_task(connection.run())
            async with asyncio.timeout(WAIT_S):
                await connection.wait_ready()
                result = await connection.call("notify_huge", {"size": 5_000_000})
            task.cancel()
    else:
        # the legacy protocol: the one in which the SDK's server sends log notifications
        url = table["url"]
        async with (
            capped_http_client(url, server="huge", limit=CAP, headers={}) as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                logging_callback=on_log,
            ) as client,
        ):
            await client.call_tool("notify_huge", {"size": 10})
            result = await client.call_tool("notify_huge", {"size": 5_000_000})
        # with events the small notification arrived and the huge one did not; plain-JSON
        # replies carry none
        assert len(received) == (1 if transport == "sse" else 0)
    assert [getattr(b, "text", None) for b in result.content] == ["done"]


async def test_an_oversized_reply_with_its_id_at_the_end() -> None:
    """The id after the result: each reply is matched when its line ends, also with two calls
    waiting; the connection goes on."""
    # no health check during the test: it would be one more call waiting
    connection = McpConnection("raw", McpServerConfig(command=RAW, ping_interval_s=3600))
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(WAIT_S):
            await connection.wait_ready()
            with pytest.raises(McpCallFailed, match=re.escape(CAPPED)):
                await connection.call("huge_id_last", {"size": 5_000_000})
            # answered only once both calls have reached the server
            both = await together(connection, {"size": 5_000_000, "together": 2})
            after = await connection.call("add", {"a": 40, "b": 2})
        task.cancel()
    for outcome in both:
        assert isinstance(outcome, McpCallFailed)
        assert CAPPED in str(outcome)
    assert [getattr(b, "text", None) for b in after.content] == ["42"]
    assert connection.restarts == 0


async def test_an_oversized_reply_that_names_no_id_ends_every_waiting_call() -> None:
    """Neither the first nor the last bytes name the call: both waiting calls are ended and
    told so, and the server is restarted (a reply still to come could otherwise be taken for
    a later call's); then calls work again."""
    connection = McpConnection(
        "raw",
        McpServerConfig(
            command=RAW, ping_interval_s=3600, reconnect_initial_s=0.05, reconnect_max_s=0.1
        ),
    )
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(WAIT_S):
            await connection.wait_ready()
            both = await together(connection, {"size": 5_000_000, "together": 2, "id_inside": True})
            await connection.wait_until(lambda c: c.restarts == 1 and c.state is ServerState.READY)
            after = await connection.call("add", {"a": 40, "b": 2})
        task.cancel()
    for outcome in both:
        assert isinstance(outcome, McpCallFailed)
        assert "did not say which call it answered" in str(outcome)
        assert "the server is being restarted" in str(outcome)
    assert [getattr(b, "text", None) for b in after.content] == ["42"]


async def together(connection: McpConnection, arguments: dict[str, object]) -> list[object]:
    """Two calls of ``huge_id_last`` at once, their outcomes (results or errors)."""
    return await asyncio.gather(
        *(connection.call("huge_id_last", arguments) for _ in range(2)),
        return_exceptions=True,
    )


@pytest.mark.parametrize("value", [0, 4095, -1, "1MB"])
def test_max_result_bytes_is_checked(value: object) -> None:
    with pytest.raises(ValidationError, match="max_result_bytes"):
        McpServerConfig.model_validate({"command": HUGE, "max_result_bytes": value})


def test_max_result_bytes_defaults_to_one_mebibyte() -> None:
    assert McpServerConfig(command=HUGE).max_result_bytes == CAP
