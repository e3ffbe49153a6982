"""A stdio MCP server written by hand (JSON-RPC lines, no SDK), whose huge replies put the
request id *after* the result: an order no SDK server writes, so the id is not among a
reply's first bytes.

Tools: ``huge_id_last`` (a text result of ``size`` bytes; ``id`` is the last key, or with
``id_inside`` the one before a last nested member) and ``add``.
``huge_id_last`` with ``together = N`` is held until N such calls have arrived, then all of
them are answered: the client has N calls waiting when the first huge reply arrives, whatever
order they were sent in.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "huge_id_last",
        "description": "A huge text result whose reply names its request last.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "together": {"type": "integer"},
                "id_inside": {"type": "boolean"},
            },
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


held: list[tuple[Any, dict[str, Any]]] = []


def call(request_id: Any, name: str, arguments: dict[str, Any]) -> None:
    if name == "add":
        text = str(int(arguments["a"]) + int(arguments["b"]))
        answer(request_id, {"content": [{"type": "text", "text": text}]})
        return
    held.append((request_id, arguments))
    if len(held) < int(arguments.get("together", 1)):
        return
    for waiting_id, args in held:
        result = {"content": [{"type": "text", "text": "x" * int(args["size"])}]}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "result": result, "id": waiting_id}
        if args.get("id_inside"):
            reply["_meta"] = {"note": "after the id"}
        send(json.dumps(reply))
    held.clear()


def handle(message: dict[str, Any]) -> None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return  # notifications
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


def main() -> None:
    for line in sys.stdin:
        handle(json.loads(line))


if __name__ == "__main__":
    main()
