"""A stdio server's stdout as session messages, read within the reply cap.

:class:`StdioMessages` is fed the chunks the transport reads and returns what the SDK's
session gets: each complete line parsed as a JSON-RPC message (or the parse error, as the
SDK's own transport does). A line past ``max_result_bytes`` is never held
(:class:`~bot.mcp.line_framing.LineFramer`) and becomes
:func:`~bot.mcp.reply_limit.too_large_error` for the request it answers:

* at once, when the line's first bytes name the id (``{"jsonrpc":"2.0","id":7,"result":…``,
  the order the SDKs write), so the call ends while the rest of the line is still skipped;
* when the line ends, when its last bytes do (``…},"id":7}``);
* otherwise every request still waiting is ended (``unmatched``: each is told it may have
  run) and :attr:`StdioMessages.unmatched` is set: the transport then ends the session with
  :class:`UnmatchedReply` and the server is restarted, since the replies still to come
  could no longer be told apart from those of later calls.

A server's own request or notification over the cap is dropped. :class:`OutstandingRequests`
knows which of our requests wait: the transport records each request it writes, and a
reply, an oversized reply or our cancellation ends the wait.
"""

from __future__ import annotations

import structlog
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)

from bot.errors import HatchwayError
from bot.mcp.line_framing import Frame, LineFramer, LongLine, LongLineEnd
from bot.mcp.reply_limit import HEAD_BYTES, MessageKind, head_of, tail_id, too_large_error

log = structlog.get_logger(__name__)


class UnmatchedReply(HatchwayError):
    """A reply over the cap named no request: the calls waiting were ended, and the session
    must end too (raised by the transport; the server is restarted)."""


class OutstandingRequests:
    """The ids of our requests that have no answer yet (keyed as text: 7 and "7" are one)."""

    def __init__(self) -> None:
        self._ids: dict[str, RequestId] = {}

    def sent(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._ids[str(message.id)] = message.id
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            cancelled = cancelled_request_id_from_params(message.params)
            if cancelled is not None:
                self.answered(cancelled)

    def answered(self, request_id: RequestId | None) -> None:
        if request_id is not None:
            self._ids.pop(str(request_id), None)

    def owners(self, request_id: RequestId | None) -> list[RequestId]:
        """Which waiting requests an oversized reply ends (no longer waiting after this): the
        one it names (if it waits), else every one waiting."""
        if request_id is not None:
            owner = self._ids.pop(str(request_id), None)
            return [] if owner is None else [owner]
        owners = list(self._ids.values())
        self._ids.clear()
        return owners


class StdioMessages:
    """Session messages from the stdout of server ``name``, each line at most ``limit``."""

    def __init__(self, name: str, limit: int, outstanding: OutstandingRequests) -> None:
        self._name = name
        self._limit = limit
        self._outstanding = outstanding
        self._framer = LineFramer(limit, head_bytes=HEAD_BYTES)
        self._match_at_end = False  # a long reply whose head named no id
        #: a reply could not be matched: the session must end
        self.unmatched = False

    def feed(self, chunk: bytes) -> list[SessionMessage | Exception]:
        messages: list[SessionMessage | Exception] = []
        for frame in self._framer.feed(chunk):
            messages.extend(self._of(frame))
        return messages

    def _of(self, frame: Frame) -> list[SessionMessage | Exception]:
        if isinstance(frame, LongLine):
            head = head_of(frame.head)
            if head.kind is MessageKind.REQUEST:
                log.warning("mcp_message_too_large", server=self._name, limit=self._limit)
                return []
            if head.request_id is None:
                self._match_at_end = True
                return []
            return self._too_large(head.request_id)
        if isinstance(frame, LongLineEnd):
            if not self._match_at_end:
                return []
            self._match_at_end = False
            return self._too_large(tail_id(frame.tail))
        if not frame.strip():
            return []
        try:
            message = jsonrpc_message_adapter.validate_json(frame, by_name=False)
        except ValueError as exc:
            log.warning("mcp_message_unreadable", server=self._name, error=type(exc).__name__)
            return [exc]
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._outstanding.answered(message.id)
        return [SessionMessage(message)]

    def _too_large(self, request_id: RequestId | None) -> list[SessionMessage | Exception]:
        owners = self._outstanding.owners(request_id)
        unmatched = request_id is None
        self.unmatched = self.unmatched or unmatched
        log.warning(
            "mcp_reply_too_large",
            server=self._name,
            limit=self._limit,
            request_ids=owners,
            unmatched=unmatched,
        )
        return [
            SessionMessage(too_large_error(owner, self._limit, unmatched=unmatched))
            for owner in owners
        ]
