"""The pieces of the reply cap: lines cut at a limit, a message's id read from its head, and
which waiting request an oversized reply answers."""

from __future__ import annotations

import pytest
from mcp_types import JSONRPCNotification, JSONRPCRequest, RequestId

from bot.mcp.line_framing import LineFramer, LongLine
from bot.mcp.reply_limit import HEAD_BYTES, MessageHead, MessageKind, head_of
from bot.mcp.stdio_transport import OutstandingRequests


def frame(chunks: list[bytes], limit: int, head_bytes: int = 4) -> list[bytes | LongLine]:
    framer = LineFramer(limit, head_bytes=head_bytes)
    out: list[bytes | LongLine] = []
    for chunk in chunks:
        out.extend(framer.feed(chunk))
    return out + framer.finish()


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"one\ntwo\n"], [b"one", b"two"]),
        ([b"on", b"e\nt", b"wo\n"], [b"one", b"two"]),
        ([b"exactly10!\n"], [b"exactly10!"]),
        ([b"eleven byte\nok\n"], [LongLine(b"elev"), b"ok"]),
        # the report comes when the line crosses the limit, the rest is skipped
        ([b"0123456", b"789AB", b"CDEF\nafter\n"], [LongLine(b"0123"), b"after"]),
        ([b"\n\n"], [b"", b""]),
        ([b"tail without newline"], [LongLine(b"tail")]),
        ([b"short tail"], [b"short tail"]),
    ],
)
def test_lines_are_cut_at_the_limit(chunks: list[bytes], expected: list[bytes | LongLine]) -> None:
    assert frame(chunks, limit=10) == expected


def test_a_long_line_is_never_held() -> None:
    framer = LineFramer(1000, head_bytes=100)
    reports = framer.feed(b"x" * 999)
    for _ in range(1000):
        reports += framer.feed(b"y" * 65536)
        assert len(framer._buffer) <= 1000
    reports += framer.feed(b"z\nnext\n")
    assert reports == [LongLine(b"x" * 100), b"next"]
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
