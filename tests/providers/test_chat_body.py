"""The request body: the same JSON as the request's parameters, tool schemas encoded once."""

from __future__ import annotations

import json

from bot.config import ProviderConfig
from bot.providers.base import ChatMessage, CompletionRequest, ToolCallRequest, ToolDefinition
from bot.providers.chat_body import ToolSchemas, completion_params, request_body

CONFIG = ProviderConfig(base_url="http://127.0.0.1:9/v1", model="m", max_tokens=64)
READ = ToolDefinition(
    name="file_read",
    description="Read a file, «quoted».",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
CLOCK = ToolDefinition(name="clock", description="The time.", parameters={"type": "object"})
HISTORY = (
    ChatMessage(role="user", content="compare \u00e9 \U0001f600"),
    ChatMessage(
        role="assistant", tool_calls=(ToolCallRequest(id="c1", name="clock", arguments=""),)
    ),
    ChatMessage(role="tool", tool_call_id="c1", content="noon"),
)


def test_the_body_is_the_parameters_with_stream() -> None:
    request = CompletionRequest(
        system="S", messages=HISTORY, tools=(READ, CLOCK), response_schema={"type": "object"}
    )
    for stream in (False, True):
        body = request_body(CONFIG, request, stream=stream, schemas=ToolSchemas())
        expected = {**completion_params(CONFIG, request), "stream": stream}
        if stream:
            expected["stream_options"] = {"include_usage": True}
        assert json.loads(body) == expected
        assert "\U0001f600".encode() in body  # non-ASCII sent as it is, as the SDK does


def test_a_tuple_of_tools_is_encoded_once_and_a_list_from_its_definitions() -> None:
    schemas = ToolSchemas()
    tools = (READ, CLOCK)
    first = schemas.array(tools)
    assert schemas.array(tools) is first
    assert schemas.array([READ, CLOCK]) == first
    assert schemas.array([CLOCK]) == json.dumps(
        completion_params(CONFIG, CompletionRequest(system="", messages=(), tools=[CLOCK]))[
            "tools"
        ],
        separators=(",", ":"),
    )


def test_no_tools_no_tools_key() -> None:
    request = CompletionRequest(system="", messages=HISTORY)
    body = json.loads(request_body(CONFIG, request, stream=False, schemas=ToolSchemas()))
    assert "tools" not in body


def test_a_lone_surrogate_in_the_history_is_sent_as_an_escape() -> None:
    request = CompletionRequest(system="", messages=[ChatMessage(role="user", content="a\ud83d")])
    body = request_body(CONFIG, request, stream=False, schemas=ToolSchemas())
    assert b"\\ud83d" in body
    assert json.loads(body)["messages"] == [{"role": "user", "content": "a\ud83d"}]


def test_the_tools_are_spliced_in_as_utf8_once_per_tuple() -> None:
    schemas = ToolSchemas()
    tools = (READ, CLOCK)
    request = CompletionRequest(system="S", messages=HISTORY, tools=tools)
    first = request_body(CONFIG, request, stream=False, schemas=schemas)
    assert schemas.array_utf8(tools) is schemas.array_utf8(tools)
    assert schemas.array_utf8(tools) == schemas.array(tools).encode()
    assert request_body(CONFIG, request, stream=False, schemas=schemas) == first
    # the bytes are those of the whole body's text, encoded at once, tools last
    params = completion_params(CONFIG, request)
    offered = params.pop("tools")
    text = json.dumps(
        {**params, "stream": False, "tools": offered},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert first == text.encode()
    assert json.loads(first) == {**completion_params(CONFIG, request), "stream": False}


def test_a_lone_surrogate_beside_tools_is_sent_as_an_escape() -> None:
    request = CompletionRequest(
        system="", messages=[ChatMessage(role="user", content="a\ud83d")], tools=(READ,)
    )
    body = request_body(CONFIG, request, stream=False, schemas=ToolSchemas())
    assert b"\\ud83d" in body
    assert json.loads(body)["tools"] == completion_params(CONFIG, request)["tools"]
