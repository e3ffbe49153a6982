"""The pieces of the reply cap: lines cut at a limit, a message's id read from its first or
last bytes, which waiting request an oversized reply answers, and the messages a server's
stdout becomes."""

from __future__ import annotations

import json

import pytest
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from pydantic import ValidationError

from bot.mcp.line_framing import Frame, LineFramer, LongLine, LongLineEnd
from bot.mcp.reply_limit import (
    HEAD_BYTES,
    REPLY_TOO_LARGE,
    MessageHead,
    MessageKind,
    head_of,
    tail_id,
)
from bot.mcp.stdio_messages import OutstandingRequests, StdioMessages


def frame(chunks: list[bytes], limit: int, head_bytes: int = 4) -> list[Frame]:
    framer = LineFramer(limit, head_bytes=head_bytes, tail_bytes=3)
    out: list[Frame] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out + framer.finish()


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"one\ntwo\n"], [b"one", b"two"]),
        ([b"on", b"e\nt", b"wo\n"], [b"one", b"two"]),
        ([b"exactly10!\n"], [b"exactly10!"]),
        ([b"eleven byte\nok\n"], [LongLine(b"elev"), LongLineEnd(b"yte"), b"ok"]),
        # the head comes when the line crosses the limit, the tail when it ends
        (
            [b"0123456", b"789AB", b"CDEF\nafter\n"],
            [LongLine(b"0123"), LongLineEnd(b"DEF"), b"after"],
        ),
        ([b"0123456789A", b"B", b"\n"], [LongLine(b"0123"), LongLineEnd(b"9AB")]),
        ([b"\n\n"], [b"", b""]),
        ([b"tail without newline"], [LongLine(b"tail"), LongLineEnd(b"ine")]),
        ([b"short tail"], [b"short tail"]),
    ],
)
def test_lines_are_cut_at_the_limit(chunks: list[bytes], expected: list[Frame]) -> None:
    assert frame(chunks, limit=10) == expected


def test_a_long_line_is_never_held() -> None:
    framer = LineFramer(1000, head_bytes=100)
    reports = framer.feed(b"x" * 999)
    for _ in range(1000):
        reports += framer.feed(b"y" * 65536)
        assert len(framer._buffer) <= 1000
    reports += framer.feed(b"z\nnext\n")
    assert reports == [LongLine(b"x" * 100), LongLineEnd(b"y" * 255 + b"z"), b"next"]
    assert framer.skipped_bytes == 999 + 1000 * 65536 + 1


def test_framer_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError, match="positive"):
        LineFramer(0, head_bytes=1)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"result":{"content":[', (MessageKind.REPLY, 7)),
        (
            b'{"id":"req-1","jsonrpc":"2.0","error":{"code":1',
            (MessageKind.REPLY, "req-1"),
        ),
        (b' { "jsonrpc" : "2.0" , "id" : -3 , "result" : {', (MessageKind.REPLY, -3)),
        # the id after the large value: not in the head
        (
            b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"x',
            (MessageKind.REPLY, None),
        ),
        (
            b'{"jsonrpc":"2.0","method":"notifications/message","params":{',
            (MessageKind.REQUEST, None),
        ),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{',
            (MessageKind.REQUEST, 9),
        ),
        (b'{"jsonrpc":"2.0","id":null,"error":{', (MessageKind.REPLY, None)),
        (b'{"jsonrpc":"2.0","id":1.5,"result":{', (MessageKind.REPLY, None)),
        (b'{"jsonrpc":"2.0","id":"a\\"b","result":{', (MessageKind.REPLY, None)),
        (b'[{"jsonrpc":"2.0","id":1}]', (MessageKind.UNKNOWN, None)),
        (b"not json at all", (MessageKind.UNKNOWN, None)),
        (b"", (MessageKind.UNKNOWN, None)),
        (b'{"jsonrpc":"2.0","id":12', (MessageKind.UNKNOWN, 12)),
    ],
)
def test_the_head_of_a_message(head: bytes, expected: tuple[MessageKind, RequestId | None]) -> None:
    assert head_of(head) == MessageHead(kind=expected[0], request_id=expected[1])


def test_a_hostile_head_is_read_only_up_to_its_bound() -> None:
    pairs = b",".join(b'"k%d":"\\"\\"\\""' % i for i in range(20_000))
    head = head_of(b"{" + pairs + b',"id":5,"result":{')
    assert len(pairs) > HEAD_BYTES
    assert head == MessageHead(kind=MessageKind.UNKNOWN, request_id=None)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (b'text"}],"isError":false},"id":7}', 7),
        (b'"}]},"id":"call-2"}\r', "call-2"),
        (b'"}]} , "id" : 7 , "jsonrpc" : "2.0" }', 7),
        (b'"}]},"id":7,"_meta":{"k":1}}', None),  # not the last member
        (b'text with \\",\\"id\\":5}"}', None),  # inside a string
        (b'"}]},"id":null}', None),
        (b'"}]},"id":7', None),  # no closing brace: not the end of a message
    ],
)
def test_the_id_at_the_end_of_a_message(tail: bytes, expected: RequestId | None) -> None:
    assert tail_id(tail) == expected


def request(request_id: RequestId) -> JSONRPCRequest:
    return JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params={})


def test_an_oversized_reply_answers_the_request_it_names() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(1))
    waiting.sent(request(2))
    assert waiting.owners(2) == [2]
    assert waiting.owners(2) == []  # answered once
    assert waiting.owners("1") == [1]  # the id as text is the same request


def test_without_an_id_every_waiting_request_is_answered() -> None:
    waiting = OutstandingRequests()
    assert waiting.owners(None) == []  # nothing waits: the reply is dropped
    waiting.sent(request(4))
    assert waiting.owners(None) == [4]
    waiting.sent(request(5))
    waiting.sent(request("six"))
    assert waiting.owners(None) == [5, "six"]
    assert waiting.owners(None) == []


def test_answered_and_cancelled_requests_stop_waiting() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(1))
    waiting.sent(request(2))
    waiting.sent(request(3))
    waiting.answered(1)
    waiting.sent(
        JSONRPCNotification(
            jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}
        )
    )
    assert waiting.owners(None) == [3]


LIMIT = 4096


def reply_line(request_id: RequestId, text: str, *, id_last: bool = False) -> bytes:
    result = {"content": [{"type": "text", "text": text}]}
    if id_last:
        return json.dumps({"jsonrpc": "2.0", "result": result, "id": request_id}).encode() + b"\n"
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def errors(messages: list[SessionMessage | Exception]) -> list[tuple[RequestId, str]]:
    out = []
    for message in messages:
        assert isinstance(message, SessionMessage)
        assert isinstance(message.message, JSONRPCError)
        assert message.message.error.code == REPLY_TOO_LARGE
        out.append((message.message.id, message.message.error.message))
    return out


def test_a_reply_naming_its_id_first_is_answered_before_it_ends() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(3))
    stdout = StdioMessages("srv", LIMIT, waiting)
    line = reply_line(3, "x" * 10 * LIMIT)
    ended = errors(stdout.feed(line[: 2 * LIMIT]))
    assert [(i, "was not read" in m) for i, m in ended] == [(3, True)]
    assert stdout.feed(line[2 * LIMIT :]) == []  # the rest is skipped
    assert not stdout.unmatched


def test_a_reply_naming_its_id_last_is_answered_when_it_ends() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(3))
    waiting.sent(request(4))
    stdout = StdioMessages("srv", LIMIT, waiting)
    line = reply_line(4, "x" * 10 * LIMIT, id_last=True)
    assert stdout.feed(line[:-1]) == []
    assert [i for i, _ in errors(stdout.feed(line[-1:]))] == [4]
    (small,) = stdout.feed(reply_line(3, "small"))
    assert isinstance(small, SessionMessage)
    assert isinstance(small.message, JSONRPCResponse) and small.message.id == 3
    assert waiting.owners(None) == []  # both answered
    assert not stdout.unmatched


def test_a_reply_naming_no_id_ends_every_waiting_call_and_the_session() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(3))
    waiting.sent(request(4))
    stdout = StdioMessages("srv", LIMIT, waiting)
    line = json.dumps({"result": {"text": "x" * 2 * LIMIT}, "id": 3, "_meta": {}}).encode()
    ended = errors(stdout.feed(line + b"\n"))
    assert [i for i, _ in ended] == [3, 4]
    assert all("did not say which call" in m for _, m in ended)
    assert stdout.unmatched


def test_an_oversized_notification_is_dropped() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(3))
    stdout = StdioMessages("srv", LIMIT, waiting)
    notice = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": "y" * LIMIT}}
    assert stdout.feed(json.dumps(notice).encode() + b"\n") == []
    assert waiting.owners(3) == [3]  # still waiting


def test_lines_under_the_cap_are_messages_or_parse_errors() -> None:
    waiting = OutstandingRequests()
    waiting.sent(request(3))
    stdout = StdioMessages("srv", LIMIT, waiting)
    messages = stdout.feed(b"not json\n\n" + reply_line(3, "fine"))
    assert isinstance(messages[0], ValidationError)
    assert isinstance(messages[1], SessionMessage)
    assert len(messages) == 2  # the blank line is skipped
    assert waiting.owners(None) == []
