"""The SSE decoder: the same events however the body is split into pieces."""

from __future__ import annotations

import pytest

from bot.providers.sse import ServerSentEvent, SseDecoder

BODY = (
    ": a comment\r\n\r\n"
    "event: ping\n\n"
    'data: {"text": "h\u00e9llo \U0001f600"}\r\n\r\n'
    "event: message\r"
    "data: first line\r"
    "data:second line\r\r"
    "id: 7\nretry: 100\ndata: [DONE]\n\n"
    "data: never closed"
).encode()
EXPECTED = [
    ServerSentEvent(data='{"text": "h\u00e9llo \U0001f600"}'),
    ServerSentEvent(data="first line\nsecond line", event="message"),
    ServerSentEvent(data="[DONE]"),
]


def decode(pieces: list[bytes]) -> list[ServerSentEvent]:
    decoder = SseDecoder()
    return [event for piece in pieces for event in decoder.feed(piece)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(BODY)])
def test_events_do_not_depend_on_how_the_body_is_split(size: int) -> None:
    pieces = [BODY[i : i + size] for i in range(0, len(BODY), size)]
    assert decode(pieces) == EXPECTED


def test_every_single_cut_gives_the_same_events() -> None:
    for cut in range(len(BODY) + 1):
        assert decode([BODY[:cut], BODY[cut:]]) == EXPECTED, cut


def test_bytes_that_are_not_utf8_become_replacement_characters() -> None:
    assert decode([b"data: a\xffb\n\n"]) == [ServerSentEvent(data="a\ufffdb")]


def test_a_cr_then_an_lf_in_the_next_piece_is_one_line_end() -> None:
    assert decode([b"data: a\r", b"\n", b"\r\n"]) == [ServerSentEvent(data="a")]
    assert decode([b"data: a\r", b"\r"]) == [ServerSentEvent(data="a")]
