"""Peak memory of the daemon's side of a huge MCP reply, measured in a process of its own.

``python huge_reader.py {stdio|sse|json} SIZE`` starts ``huge_server.py`` (over stdio, or
over streamable HTTP with server-sent events or plain JSON replies), connects to it with
:class:`bot.mcp.connection.McpConnection` at the default ``max_result_bytes``, warms up with
a small result, then calls ``huge`` for ``SIZE`` bytes and ``add`` after it. It prints one
JSON object: the peak RSS before and after the huge call (``ru_maxrss``, KiB), the huge
call's outcome, the next call's answer, and the restarts the connection went through.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mcp_types import TextContent  # noqa: E402

from bot.config import McpServerConfig  # noqa: E402
from bot.mcp.connection import McpCallFailed, McpConnection  # noqa: E402
from tests.mcp.http_process import http_process  # noqa: E402

SERVER = [sys.executable, str(Path(__file__).with_name("huge_server.py"))]


def peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def measure(connection: McpConnection, size: int) -> dict[str, object]:
    async with asyncio.TaskGroup() as group:
        task = group.create_task(connection.run())
        async with asyncio.timeout(60):
            await connection.wait_ready()
        await connection.call("huge", {"size": 200_000})  # warm up: buffers, parsers
        before = peak_kib()
        try:
            result = await connection.call("huge", {"size": size})
            outcome = f"read {sum(len(str(b)) for b in result.content)} characters"
        except McpCallFailed as exc:
            outcome = str(exc)
        after = peak_kib()
        following = await connection.call("add", {"a": 40, "b": 2})
        task.cancel()
    return {
        "before_kib": before,
        "after_kib": after,
        "outcome": outcome,
        "next": " ".join(b.text for b in following.content if isinstance(b, TextContent)),
        "restarts": connection.restarts,
    }


async def main(transport: str, size: int) -> None:
    if transport == "stdio":
        config = McpServerConfig(command=SERVER)
        report = await measure(McpConnection("huge", config), size)
    else:
        extra = ["--json"] if transport == "json" else []
        async with http_process(SERVER, *extra) as url:
            report = await measure(McpConnection("huge", McpServerConfig(url=url)), size)
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
