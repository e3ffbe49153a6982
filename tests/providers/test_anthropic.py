"""The Anthropic provider against a loopback Messages API server (real SDK)."""

from __future__ import annotations

import json

import pytest

from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest, ToolCallRequest, ToolDefinition
from tests.fakes.anthropic_server import AnthropicFake
from tests.providers.conftest import AnthropicFactory
from tests.providers.recorders import TEST_KEY, RecordedSleep, SinkRecorder

HELLO = CompletionRequest(system="Be brief.", messages=[ChatMessage(role="user", content="hi")])
READ = ToolDefinition(
    name="file_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def _call(call_id: str, path: str) -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name="file_read", arguments=json.dumps({"path": path}))


@pytest.mark.parametrize("streamed", [False, True])
async def test_plain_answer_with_system_and_max_tokens(
    anthropic_fake: AnthropicFake,
    make_anthropic: AnthropicFactory,
    sink: SinkRecorder,
    streamed: bool,
) -> None:
    anthropic_fake.queue_text("Hello from Claude.")
    reply = await make_anthropic(max_tokens=777).complete(HELLO, stream=sink if streamed else None)

    assert reply.text == "Hello from Claude."
    assert reply.finish_reason == "end_turn"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (13, 5)
    request = anthropic_fake.requests[0]
    assert request.body["system"] == "Be brief."
    assert request.body["max_tokens"] == 777
    assert request.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]
    auth = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert TEST_KEY in auth
    assert sink.text == ("Hello from Claude." if streamed else "")


@pytest.mark.parametrize("streamed", [False, True])
async def test_tool_use_reply(
    anthropic_fake: AnthropicFake,
    make_anthropic: AnthropicFactory,
    sink: SinkRecorder,
    streamed: bool,
) -> None:
    anthropic_fake.queue_tool_calls(
        [("file_read", {"path": "a.md"}), ("file_read", {"path": "b/ü.md"})], text="Looking."
    )
    request = CompletionRequest(system="", messages=HELLO.messages, tools=[READ])
    reply = await make_anthropic().complete(request, stream=sink if streamed else None)

    assert reply.text == "Looking."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("file_read", {"path": "a.md"}),
        ("file_read", {"path": "b/ü.md"}),
    ]
    assert [c.id for c in reply.tool_calls] == ["toolu_fake_1", "toolu_fake_2"]
    assert reply.finish_reason == "tool_use"
    body = anthropic_fake.requests[0].body
    assert "system" not in body
    assert body["tools"] == [
        {"name": "file_read", "description": "Read a file.", "input_schema": dict(READ.parameters)}
    ]
    if streamed:
        assert sink.text == "Looking."


def test_history_mapping_merges_tool_results_and_places_system() -> None:
    history = [
        ChatMessage(role="system", content="Earlier summary."),
        ChatMessage(role="user", content="compare a and b"),
        ChatMessage(
            role="assistant",
            content="Reading both.",
            tool_calls=(_call("t1", "a"), _call("t2", "b")),
        ),
        ChatMessage(role="tool", tool_call_id="t1", content="A"),
        ChatMessage(role="tool", tool_call_id="t2", content=""),
        ChatMessage(role="user", content="so?"),
        ChatMessage(
            role="assistant", tool_calls=(ToolCallRequest(id="t3", name="x", arguments="{oops"),)
        ),
        ChatMessage(role="tool", tool_call_id="t3", content="bad arguments"),
    ]
    from bot.providers.anthropic import to_anthropic_request

    system, messages = to_anthropic_request("Be brief.", history)

    assert system == "Be brief.\n\nEarlier summary."
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "compare a and b"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "t1", "name": "file_read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "file_read", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "(no output)"},
                {"type": "text", "text": "so?"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t3", "name": "x", "input": {"_raw_arguments": "{oops"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "bad arguments"}],
        },
    ]


def test_history_starting_with_the_assistant_gets_a_placeholder_user_turn() -> None:
    from bot.providers.anthropic import HISTORY_TRIMMED, to_anthropic_request

    _, messages = to_anthropic_request(
        "", [ChatMessage(role="assistant", content="Hi!"), ChatMessage(role="user", content="yo")]
    )
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": HISTORY_TRIMMED}]}
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]


async def test_429_retry_after_then_overloaded_then_success(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, sleep: RecordedSleep
) -> None:
    anthropic_fake.queue_error(429, headers={"retry-after": "4"})
    anthropic_fake.queue_error(529)
    anthropic_fake.queue_text("finally")
    reply = await make_anthropic().complete(HELLO)

    assert reply.text == "finally"
    assert sleep.waits[0] == 4.0
    assert len(sleep.waits) == 2


async def test_stream_cut_midway_is_retried_whole(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, sink: SinkRecorder
) -> None:
    anthropic_fake.queue_tool_calls(
        [("file_read", {"path": "x.md"})], text="Let me see", cut_after=4
    )
    anthropic_fake.queue_tool_calls([("file_read", {"path": "x.md"})], text="Let me see")
    reply = await make_anthropic().complete(HELLO, stream=sink)

    assert reply.text == "Let me see"
    assert [json.loads(c.arguments) for c in reply.tool_calls] == [{"path": "x.md"}]
    assert len(anthropic_fake.requests) == 2
    assert sink.text == "Let me see"


async def test_error_event_mid_stream_is_retried(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory
) -> None:
    anthropic_fake.queue_stream(
        [
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        ]
    )
    anthropic_fake.queue_text("ok now")
    reply = await make_anthropic(stream=True).complete(HELLO)
    assert reply.text == "ok now"
    assert len(anthropic_fake.requests) == 2


async def test_missing_credentials_are_a_permanent_error(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, sleep: RecordedSleep
) -> None:
    anthropic_fake.queue_error(401)
    with pytest.raises(ProviderError) as caught:
        await make_anthropic().complete(HELLO)
    assert str(caught.value) == "claude rejected the API key (HTTP 401)"
    assert sleep.waits == []
