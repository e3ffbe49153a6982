"""The cap on one message from an MCP server, shared by the stdio and HTTP transports.

A server's message (a tool result, a tool listing, a notification) longer than
``mcp.servers.<name>.max_result_bytes`` is never held whole: the transport stops reading it
at the cap, skips the rest, and answers the request it belonged to with a JSON-RPC error
(:func:`too_large_error`, code :data:`REPLY_TOO_LARGE`) that the SDK hands back to the caller
like any error the server could have sent. The model then sees a failed call that names the
cap (:func:`too_large_message`), and the connection stays usable.

Which request an oversized message answers is read from its first bytes
(:func:`head_of`): the SDK and most servers write ``{"jsonrpc":"2.0","id":7,"result":…``, so
the id comes before anything large. A message that is a server's request or notification
(``"method"``) is dropped instead. Over stdio, a reply whose head names no id is matched by
its last bytes when it ends (:func:`tail_id`: ``…},"id":7}``); one that names its id in
neither place ends every call waiting on that server (``unmatched``), and the server is
restarted.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from mcp_types import ErrorData, JSONRPCError, RequestId

#: JSON-RPC error code of a reply the transport refused to read (implementation-defined
#: server-error range, unused by the SDK).
REPLY_TOO_LARGE = -32090

#: Bytes of an oversized message searched for its id and kind.
HEAD_BYTES = 64 * 1024


def too_large_message(limit: int, *, unmatched: bool = False) -> str:
    """What the model is told about a reply over the cap (``unmatched``: a reply that did not
    say which of several waiting calls it answered, so all of them were ended)."""
    if unmatched:
        return (
            f"a reply from the server exceeded {limit} bytes (max_result_bytes) and did not "
            "say which call it answered, so every call waiting on this server was ended and "
            "the server is being restarted; this one may have run, check before repeating it"
        )
    return (
        f"the server's reply exceeded {limit} bytes (max_result_bytes) and was not read; "
        "ask the tool for less (a narrower query, a page, a summary)"
    )


def too_large_error(request_id: RequestId, limit: int, *, unmatched: bool = False) -> JSONRPCError:
    """The JSON-RPC error that ends request ``request_id`` in place of its oversized reply."""
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(
            code=REPLY_TOO_LARGE, message=too_large_message(limit, unmatched=unmatched)
        ),
    )


class MessageKind(enum.Enum):
    """What the first keys of a JSON-RPC message say it is."""

    REPLY = "reply"  # "result" or "error": the answer to one of our requests
    REQUEST = "request"  # "method": a request or notification from the server
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageHead:
    """The id and kind of a message, as far as its first bytes tell."""

    kind: MessageKind
    request_id: RequestId | None


_SPACE = rb"[ \t\r\n]*"
_OPEN = re.compile(_SPACE + rb"\{")
_KEY = re.compile(_SPACE + rb'"((?:[^"\\]|\\.)*)"' + _SPACE + rb":" + _SPACE)
_SCALAR = re.compile(
    rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null', re.DOTALL
)
_COMMA = re.compile(_SPACE + rb",")
_INTEGER = re.compile(rb"-?\d+")


def head_of(data: bytes) -> MessageHead:
    """Read the top-level keys of a JSON object from its first bytes, up to the first nested
    value (or the end of ``data``): the ``id`` when it is among them, and whether a
    ``result``/``error`` or a ``method`` key was seen. Never raises; regex steps only, so a
    hostile head costs no more than a scan of :data:`HEAD_BYTES`."""
    data = data[:HEAD_BYTES]
    match = _OPEN.match(data)
    if match is None:
        return MessageHead(kind=MessageKind.UNKNOWN, request_id=None)
    position = match.end()
    kind = MessageKind.UNKNOWN
    request_id: RequestId | None = None
    while (key := _KEY.match(data, position)) is not None:
        name = key.group(1)
        if name in (b"result", b"error"):
            kind = MessageKind.REPLY
        elif name == b"method":
            kind = MessageKind.REQUEST
        value = _SCALAR.match(data, key.end())
        if value is None:
            break  # a nested value (or the end of the head): nothing cheap beyond it
        if name == b"id":
            request_id = _request_id(value.group())
        comma = _COMMA.match(data, value.end())
        if comma is None:
            break
        position = comma.end()
    return MessageHead(kind=kind, request_id=request_id)


_TAIL_ID = re.compile(
    _SPACE
    + rb',[ \t\r\n]*"id"[ \t\r\n]*:[ \t\r\n]*(-?\d+|"[^"\\]*")'
    + rb'(?:[ \t\r\n]*,[ \t\r\n]*"jsonrpc"[ \t\r\n]*:[ \t\r\n]*"2\.0")?'
    + rb"[ \t\r\n]*\}[ \t\r\n]*\Z"
)


def tail_id(data: bytes) -> RequestId | None:
    """The id of a JSON-RPC message from its last bytes, when it is the object's last member
    (or last but ``"jsonrpc"``): ``…,"id":7}``. A comma before an unescaped quote and the
    object's closing brace as the message's last character cannot be inside a string, so the
    match is a top-level member."""
    match = _TAIL_ID.search(data)
    return None if match is None else _request_id(match.group(1))


def _request_id(token: bytes) -> RequestId | None:
    if _INTEGER.fullmatch(token):
        return int(token)
    if token.startswith(b'"') and b"\\" not in token:
        try:
            return token[1:-1].decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None  # null, a float, or an escaped string: not an id we ever send
