"""Lone UTF-16 surrogates are repaired at the provider boundary: the repair functions alone,
then replies through the real OpenAI and Anthropic SDKs (loopback fakes), JSON and streamed,
with lone surrogates in text, in deltas, in tool names and in arguments (as raw characters
and as JSON escapes)."""

from __future__ import annotations

import json

import pytest

from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ProviderReply,
    ToolCallRequest,
    ToolDefinition,
)
from bot.providers.surrogates import (
    DeltaRepair,
    clean_arguments,
    clean_reply,
    clean_text,
    clean_value,
)
from bot.providers.text_protocol import TextProtocolProvider
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake, chunk
from tests.providers.conftest import AnthropicFactory, OpenAIFactory
from tests.providers.recorders import SinkRecorder

HIGH, LOW, FFFD, EMOJI = "\ud83d", "\ude00", "\ufffd", "😀"
HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])
ECHO = ToolDefinition(name="echo", description="Echo.", parameters={"type": "object"})


def _encodable(reply: ProviderReply) -> None:
    reply.text.encode()
    for call in reply.tool_calls:
        (call.id + call.name + call.arguments).encode()
        json.dumps(json.loads(call.arguments), ensure_ascii=False).encode()


# -- the repair functions -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("plain text", "plain text"),
        (EMOJI, EMOJI),
        (f"a{HIGH}b", f"a{FFFD}b"),
        (f"a{LOW}b", f"a{FFFD}b"),
        (f"end {HIGH}", f"end {FFFD}"),
        (f"{HIGH}{LOW}", EMOJI),  # a pair that arrived as two code units is joined
        (f"{HIGH}{HIGH}{LOW}x", f"{FFFD}{EMOJI}x"),
        (f"{LOW}{HIGH}", f"{FFFD}{FFFD}"),
    ],
)
def test_clean_text(given: str, expected: str) -> None:
    assert clean_text(given) == expected


def test_clean_text_returns_clean_text_itself() -> None:
    text = "nothing to repair é 😀"
    assert clean_text(text) is text


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ('{"q": "\\ud83d"}', {"q": FFFD}),  # an escape, plain ASCII until parsed
        ('{"q": "\\udE00 x", "n": [1, "\\uD83D"]}', {"q": f"{FFFD} x", "n": [1, FFFD]}),
        ('{"\\ud83d": 1}', {FFFD: 1}),
        (f'{{"q": "{HIGH}"}}', {"q": FFFD}),  # a raw character
        ('{"q": "\\ud83d\\ude00"}', {"q": EMOJI}),  # a valid escaped pair stays as written
    ],
)
def test_clean_arguments_repairs_text_and_values(raw: str, decoded: object) -> None:
    cleaned = clean_arguments(raw)
    cleaned.encode()
    assert json.loads(cleaned) == decoded


@pytest.mark.parametrize(
    "raw", ['{"path": "a.md"}', '{"q": "\\ud83d\\ude00"}', '{"q": "\\\\ud83d"}', "not json \\ud83d"]
)
def test_clean_arguments_keeps_clean_text_as_written(raw: str) -> None:
    assert clean_arguments(raw) is raw


def test_clean_value_walks_containers() -> None:
    assert clean_value({"a": [HIGH, {"b": LOW}], "n": 1.5, "t": None}) == {
        "a": [FFFD, {"b": FFFD}],
        "n": 1.5,
        "t": None,
    }


def test_clean_reply_is_the_same_object_when_clean() -> None:
    reply = ProviderReply(
        text="ok", tool_calls=(ToolCallRequest(id="c1", name="echo", arguments="{}"),)
    )
    assert clean_reply(reply) is reply


@pytest.mark.parametrize(
    ("pieces", "forwarded"),
    [
        (["ab", "cd"], ["ab", "cd"]),
        ([f"ab{HIGH}", f"{LOW}cd"], ["ab", f"{EMOJI}cd"]),  # a pair split across deltas
        ([f"ab{HIGH}", "cd"], ["ab", f"{FFFD}cd"]),
        ([HIGH, LOW], ["", EMOJI]),
        ([f"a{LOW}b"], [f"a{FFFD}b"]),
        ([f"{HIGH}{HIGH}", f"{LOW}"], [FFFD, EMOJI]),
    ],
)
def test_delta_repair(pieces: list[str], forwarded: list[str]) -> None:
    repair = DeltaRepair()
    assert [repair.feed(piece) for piece in pieces] == forwarded


# -- OpenAI-compatible ----------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_scripted_reply_is_repaired(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.queue_tool_calls([("echo", {"q": f"x{HIGH}", "k": LOW})], text=f"see {HIGH}")
    request = CompletionRequest(system="", messages=HELLO.messages, tools=[ECHO])
    reply = await make_openai().complete(request, stream=sink if streamed else None)

    _encodable(reply)
    assert reply.text == f"see {FFFD}"
    (call,) = reply.tool_calls
    assert json.loads(call.arguments) == {"q": f"x{FFFD}", "k": FFFD}
    if streamed:
        sink.text.encode()
        assert sink.text == f"see {FFFD}"


async def test_openai_json_reply_with_raw_lone_surrogates(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    message = {
        "role": "assistant",
        "content": f"a{LOW}",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                # the argument string itself carries raw lone surrogates, not escapes
                "function": {"name": f"echo{HIGH}", "arguments": f'{{"q": "{HIGH}"}}'},
            }
        ],
    }
    openai_fake.queue_json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "fake-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
    )
    reply = await make_openai().complete(HELLO)

    _encodable(reply)
    assert reply.text == f"a{FFFD}"
    (call,) = reply.tool_calls
    assert call.name == f"echo{FFFD}"
    assert call.arguments == f'{{"q": "{FFFD}"}}'


async def test_openai_stream_that_splits_pairs_across_chunks(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder
) -> None:
    head = {"index": 0, "id": "call_1", "type": "function"}
    openai_fake.queue_stream(
        [
            chunk(content=f"ab{HIGH}"),
            chunk(content=f"{LOW}cd {HIGH}"),
            chunk(content="!"),
            chunk(tool_calls=[{**head, "function": {"name": "echo", "arguments": '{"q": "'}}]),
            chunk(tool_calls=[{"index": 0, "function": {"arguments": f"{HIGH}"}}]),
            chunk(tool_calls=[{"index": 0, "function": {"arguments": f'{LOW}", "r": "{LOW}"}}'}}]),
            chunk(finish_reason="tool_calls"),
        ]
    )
    reply = await make_openai().complete(HELLO, stream=sink)

    _encodable(reply)
    assert reply.text == f"ab{EMOJI}cd {FFFD}!"
    assert sink.text == reply.text
    assert "" not in sink.deltas
    (call,) = reply.tool_calls
    assert json.loads(call.arguments) == {"q": EMOJI, "r": FFFD}


async def test_text_protocol_calls_are_repaired(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder
) -> None:
    block = '<tool_call>{"name": "echo", "arguments": {"q": "\\ud83d"}}</tool_call>'
    openai_fake.queue_text(f"Sure {HIGH}\n{block}")
    provider = TextProtocolProvider(make_openai())
    request = CompletionRequest(system="", messages=HELLO.messages, tools=[ECHO])
    reply = await provider.complete(request, stream=sink)

    _encodable(reply)
    assert reply.text == f"Sure {FFFD}"
    (call,) = reply.tool_calls
    assert json.loads(call.arguments) == {"q": FFFD}
    assert sink.text.strip() == f"Sure {FFFD}"


# -- Anthropic ------------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_scripted_reply_is_repaired(
    anthropic_fake: AnthropicFake,
    make_anthropic: AnthropicFactory,
    sink: SinkRecorder,
    streamed: bool,
) -> None:
    anthropic_fake.queue_tool_calls([("echo", {"q": f"x{HIGH}", LOW: 1})], text=f"see {LOW}")
    request = CompletionRequest(system="", messages=HELLO.messages, tools=[ECHO])
    reply = await make_anthropic().complete(request, stream=sink if streamed else None)

    _encodable(reply)
    assert reply.text == f"see {FFFD}"
    (call,) = reply.tool_calls
    assert json.loads(call.arguments) == {"q": f"x{FFFD}", FFFD: 1}
    if streamed:
        assert sink.text == f"see {FFFD}"


async def test_anthropic_stream_with_a_lone_surrogate_in_the_tool_name(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, sink: SinkRecorder
) -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }

    def delta(index: int, body: dict[str, object]) -> tuple[str, dict[str, object]]:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": body},
        )

    tool = {"type": "tool_use", "id": "toolu_1", "name": f"echo{LOW}", "input": {}}
    anthropic_fake.queue_stream(
        [
            ("message_start", start),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            delta(0, {"type": "text_delta", "text": f"hi{HIGH}"}),
            delta(0, {"type": "text_delta", "text": f"{LOW}!"}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 1, "content_block": tool},
            ),
            delta(1, {"type": "input_json_delta", "partial_json": f'{{"q": "{HIGH}'}),
            delta(1, {"type": "input_json_delta", "partial_json": '"}'}),
            ("content_block_stop", {"type": "content_block_stop", "index": 1}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 3},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    reply = await make_anthropic().complete(HELLO, stream=sink)

    _encodable(reply)
    assert reply.text == f"hi{EMOJI}!"
    assert sink.text == reply.text
    (call,) = reply.tool_calls
    assert call.name == f"echo{FFFD}"
    assert json.loads(call.arguments) == {"q": FFFD}
