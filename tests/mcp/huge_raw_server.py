"""A stdio MCP server written by hand (JSON-RPC lines, no SDK), whose huge replies put the
request id *after* the result: the order no SDK server writes, and the one a transport cannot
read the id from without reading the whole line.

Tools: ``huge_id_last`` (a text result of ``size`` bytes, ``id`` as the last key) and ``add``.
Requests are answered in order; ``huge_id_last`` waits ``delay_s`` before answering, so that a
test can have a second call waiting when the huge reply arrives.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

TOOLS = [
    {
        "name": "huge_id_last",
        "description": "A huge text result whose reply names its request last.",
        "inputSchema": {
            "type": "object",
            "properties": {"size": {"type": "integer"}, "delay_s": {"type": "number"}},
            "required": ["size"],
        },
    },
    {
        "name": "add",
        "description": "Add two integer numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
]


def send(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: dict[str, Any]) -> None:
    send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    if name == "add":
        text = str(int(arguments["a"]) + int(arguments["b"]))
        answer(request_id, {"content": [{"type": "text", "text": text}]})
        return
    time.sleep(float(arguments.get("delay_s", 0)))
    result = {"content": [{"type": "text", "text": "x" * int(arguments["size"])}]}
    send(json.dumps({"jsonrpc": "2.0", "result": result, "id": request_id}))


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # notifications
        if method == "initialize":
            answer(
                request_id,
                {
                    "protocolVersion": message["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "huge-raw", "version": "1"},
                },
            )
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = message["params"]
            call(request_id, params["name"], params.get("arguments") or {})
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            send(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))


if __name__ == "__main__":
    main()
