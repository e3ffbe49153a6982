"""The OpenAI-compatible provider against a loopback Chat Completions server (real SDK)."""

from __future__ import annotations

import json

import pytest

from bot.config import ProviderConfig
from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    ToolCallRequest,
    ToolDefinition,
    Usage,
)
from bot.providers.openai_compat import completion_params, raw_arguments
from tests.fakes.openai_server import OpenAIFake, chunk
from tests.providers.conftest import OpenAIFactory
from tests.providers.recorders import TEST_KEY, RecordedSleep, SinkRecorder

HELLO = CompletionRequest(system="Be brief.", messages=[ChatMessage(role="user", content="hi")])
READ = ToolDefinition(
    name="file_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


@pytest.mark.parametrize("streamed", [False, True])
async def test_plain_answer(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.queue_text("Hello there, friend.")
    reply = await make_openai(max_tokens=321).complete(HELLO, stream=sink if streamed else None)

    assert reply.text == "Hello there, friend."
    assert reply.tool_calls == ()
    assert reply.finish_reason == "stop"
    # the fake's 11 prompt tokens include 4 read from the cache
    assert reply.usage == Usage(input_tokens=7, output_tokens=7, cache_read_tokens=4)
    body = openai_fake.requests[0].body
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == 321
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert "tools" not in body
    assert bool(body.get("stream")) is streamed
    assert openai_fake.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
    if streamed:
        assert len(sink.deltas) > 1
        assert sink.text == "Hello there, friend."
    else:
        assert sink.deltas == []


async def test_config_stream_flag_streams_without_a_sink(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_text("streamed anyway")
    reply = await make_openai(stream=True).complete(HELLO)
    assert reply.text == "streamed anyway"
    assert openai_fake.requests[0].body["stream"] is True


@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_calls_and_history_mapping(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.queue_tool_calls(
        [("file_read", {"path": "a.md"}), ("file_read", {"path": "b.md"})], text="Reading."
    )
    history = [
        ChatMessage(role="user", content="compare"),
        ChatMessage(
            role="assistant",
            tool_calls=(ToolCallRequest(id="c1", name="file_read", arguments='{"path": "x"}'),),
        ),
        ChatMessage(role="tool", tool_call_id="c1", content="x contents"),
        ChatMessage(role="user", content="and the others?"),
    ]
    request = CompletionRequest(system="S", messages=history, tools=[READ], max_tokens=50)
    reply = await make_openai().complete(request, stream=sink if streamed else None)

    assert reply.text == "Reading."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("file_read", {"path": "a.md"}),
        ("file_read", {"path": "b.md"}),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2
    assert reply.finish_reason == "tool_calls"
    body = openai_fake.requests[0].body
    assert body["messages"][1:] == [
        {"role": "user", "content": "compare"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "file_read", "arguments": '{"path": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x contents"},
        {"role": "user", "content": "and the others?"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "file_read",
                "description": "Read a file.",
                "parameters": dict(READ.parameters),
            },
        }
    ]
    if streamed:
        assert sink.text == "Reading."


async def test_two_parallel_tool_calls_streamed_interleaved(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder
) -> None:
    def part(index: int, arguments: str, **head: str) -> dict[str, object]:
        call: dict[str, object] = {"index": index, "function": {"arguments": arguments}}
        if head:
            call.update({"id": head["id"], "type": "function"})
            call["function"] = {"name": head["name"], "arguments": arguments}
        return call

    openai_fake.queue_stream(
        [
            chunk(content="Let me look."),
            chunk(tool_calls=[part(0, "", id="call_a", name="file_read")]),
            chunk(tool_calls=[part(1, '{"pa', id="call_b", name="web_get")]),
            chunk(tool_calls=[part(0, '{"path": ')]),
            chunk(tool_calls=[part(1, 'th": "https://x"'), part(0, '"a.md"')]),
            chunk(tool_calls=[part(0, "}")]),
            chunk(tool_calls=[part(1, "}")]),
            chunk(finish_reason="tool_calls"),
        ]
    )
    reply = await make_openai().complete(HELLO, stream=sink)

    assert reply.tool_calls == (
        ToolCallRequest(id="call_a", name="file_read", arguments='{"path": "a.md"}'),
        ToolCallRequest(id="call_b", name="web_get", arguments='{"path": "https://x"}'),
    )
    assert reply.text == "Let me look."
    assert sink.deltas == ["Let me look."]


async def test_arguments_split_across_many_deltas(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    arguments = json.dumps({"path": "notes/2024/ünïcode.md", "limit": 20})
    head = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "file_read", "arguments": ""},
    }
    pieces = [chunk(tool_calls=[{"index": 0, "function": {"arguments": ch}}]) for ch in arguments]
    openai_fake.queue_stream([chunk(tool_calls=[head]), *pieces, chunk(finish_reason="tool_calls")])

    reply = await make_openai(stream=True).complete(HELLO)

    assert len(pieces) > 30
    assert reply.tool_calls == (
        ToolCallRequest(id="call_1", name="file_read", arguments=arguments),
    )


async def test_ollama_style_quirks_in_a_json_reply(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_json(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "llama3.1:8b",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "type": "function",
                                "function": {"name": "file_read", "arguments": {"path": "a"}},
                            },
                            {
                                "id": "",
                                "type": "function",
                                "function": {"name": "current_time", "arguments": ""},
                            },
                        ],
                    },
                }
            ],
        }
    )
    reply = await make_openai().complete(HELLO)

    assert reply.text == ""
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("file_read", '{"path": "a"}'),
        ("current_time", "{}"),
    ]
    assert all(c.id.startswith("call_") for c in reply.tool_calls)
    assert reply.tool_calls[0].id != reply.tool_calls[1].id
    assert reply.usage is None  # the server reported none: the turn estimates it
    assert reply.model == "llama3.1:8b"


async def test_streamed_quirks_every_call_index_zero_and_object_arguments(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_stream(
        [
            chunk(
                tool_calls=[
                    {"index": 0, "id": "a", "function": {"name": "one", "arguments": {"n": 1}}}
                ]
            ),
            chunk(
                tool_calls=[
                    {"index": 0, "id": "b", "function": {"name": "two", "arguments": '{"n": 2}'}}
                ]
            ),
            chunk(tool_calls=[{"index": 0, "function": {"name": "three", "arguments": "{}"}}]),
            chunk(finish_reason="tool_calls"),
        ]
    )
    reply = await make_openai(stream=True).complete(HELLO)

    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("one", {"n": 1}),
        ("two", {"n": 2}),
        ("three", {}),
    ]
    assert [c.id for c in reply.tool_calls][:2] == ["a", "b"]
    assert reply.tool_calls[2].id.startswith("call_")


async def test_stream_cut_midway_is_retried_whole(
    openai_fake: OpenAIFake,
    make_openai: OpenAIFactory,
    sink: SinkRecorder,
    sleep: RecordedSleep,
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    openai_fake.queue_text(text, cut_after=3)
    openai_fake.queue_text(text)
    reply = await make_openai().complete(HELLO, stream=sink)

    assert reply.text == text
    assert len(openai_fake.requests) == 2
    assert len(sleep.waits) == 1
    # the user's draft shows the text once, not the first attempt's start twice
    assert sink.text == text


async def test_cut_tool_call_stream_never_returns_half_a_call(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_tool_calls([("file_read", {"path": "long/path.md"})], cut_after=3)
    openai_fake.queue_tool_calls([("file_read", {"path": "long/path.md"})])
    reply = await make_openai(stream=True).complete(HELLO)

    assert [json.loads(c.arguments) for c in reply.tool_calls] == [{"path": "long/path.md"}]
    assert len(openai_fake.requests) == 2


async def test_stream_ending_without_finish_is_retried(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_stream([chunk(content="Half an ans")], done=False)
    openai_fake.queue_text("A whole answer.")
    reply = await make_openai(stream=True).complete(HELLO)
    assert reply.text == "A whole answer."
    assert len(openai_fake.requests) == 2


async def test_retry_with_different_text_stops_the_draft(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder
) -> None:
    openai_fake.queue_text("First version of the answer", cut_after=3)
    openai_fake.queue_text("Second, different answer")
    reply = await make_openai().complete(HELLO, stream=sink)

    assert reply.text == "Second, different answer"
    assert sink.text == "First version of the answer"[: len(sink.text)]
    assert "Second" not in sink.text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ("", "{}"),
        ("  ", "{}"),
        (None, "{}"),
        ({"a": [1, "ü"]}, '{"a": [1, "ü"]}'),
        ("{broken", "{broken"),
    ],
)
def test_raw_arguments(value: object, expected: str) -> None:
    assert raw_arguments(value) == expected


@pytest.mark.parametrize(
    ("base_url", "key"),
    [
        (None, "max_completion_tokens"),
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
    ],
)
def test_reply_cap_parameter_depends_on_the_endpoint(base_url: str | None, key: str) -> None:
    config = ProviderConfig(base_url=base_url, model="m", max_tokens=99, temperature=0.2)
    params = completion_params(config, HELLO)
    assert params[key] == 99
    (other,) = {"max_tokens", "max_completion_tokens"} - {key}
    assert other not in params
    assert params["temperature"] == 0.2
