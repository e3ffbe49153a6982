"""The text tool protocol: instructions, parsing (never raising), and the wrapper provider."""

from __future__ import annotations

import json

import pytest

from bot.providers.base import ChatMessage, CompletionRequest, ToolCallRequest, ToolDefinition
from bot.providers.text_protocol import (
    TextProtocolProvider,
    parse_tool_calls,
    render_history,
    render_tool_instructions,
)
from tests.fakes.openai_server import OpenAIFake
from tests.providers.conftest import OpenAIFactory
from tests.providers.recorders import SinkRecorder

READ = ToolDefinition(
    name="file_read",
    description="Read a file from the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def test_instructions_list_each_tool_with_its_schema() -> None:
    text = render_tool_instructions([READ])
    assert "<tool_call>" in text
    assert "- file_read: Read a file from the workspace." in text
    assert '"path": {"type": "string"}' in text


@pytest.mark.parametrize(
    ("text", "visible", "calls"),
    [
        ("Just an answer.", "Just an answer.", []),
        (
            'Sure.\n<tool_call>{"name": "file_read", "arguments": {"path": "a.md"}}</tool_call>',
            "Sure.",
            [("file_read", {"path": "a.md"})],
        ),
        (
            '<tool_call>{"name":"a","arguments":{}}</tool_call> and '
            '<tool_call>\n{"name":"b","arguments":{"x":[1]}}\n</tool_call> done',
            "and  done",
            [("a", {}), ("b", {"x": [1]})],
        ),
        (
            '<tool_call>```json\n{"name": "a", "arguments": {"k": "v"}}\n```</tool_call>',
            "",
            [("a", {"k": "v"})],
        ),
        (
            'Wait <tool_call>{"name": "a", "parameters": {"k": 1}}',  # unterminated
            "Wait",
            [("a", {"k": 1})],
        ),
        (
            '<tool_call>{"name": "a", "arguments": "{\\"k\\": 2}"}</tool_call>',
            "",
            [("a", {"k": 2})],
        ),
    ],
)
def test_parse_well_formed_blocks(
    text: str, visible: str, calls: list[tuple[str, dict[str, object]]]
) -> None:
    shown, parsed = parse_tool_calls(text)
    assert shown == visible
    assert [(c.name, json.loads(c.arguments)) for c in parsed] == calls
    assert len({c.id for c in parsed}) == len(parsed)
    assert all(c.id.startswith("call_") for c in parsed)


@pytest.mark.parametrize(
    ("block", "name"),
    [
        ('{"name": "file_read", "arguments": {"path": "a.md"', "file_read"),  # truncated
        ("{name: file_read}", ""),
        ("not json at all", ""),
        ('["file_read", {}]', ""),
        ('{"arguments": {"path": "a"}}', ""),
    ],
)
def test_malformed_blocks_become_calls_the_pipeline_can_reject(block: str, name: str) -> None:
    shown, parsed = parse_tool_calls(f"Trying.<tool_call>{block}</tool_call>")
    assert shown == "Trying."
    assert len(parsed) == 1
    assert parsed[0].name == name
    assert parsed[0].arguments  # kept so the pipeline can say what was wrong
    if name:
        with pytest.raises(ValueError):
            json.loads(parsed[0].arguments)


def test_history_is_rendered_as_alternating_text() -> None:
    rendered = render_history(
        [
            ChatMessage(role="user", content="read a"),
            ChatMessage(
                role="assistant",
                content="Reading.",
                tool_calls=(ToolCallRequest(id="c1", name="file_read", arguments='{"path":"a"}'),),
            ),
            ChatMessage(role="tool", tool_call_id="c1", content="A!"),
            ChatMessage(role="user", content="thanks"),
        ]
    )
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[1].content == (
        'Reading.\n<tool_call>{"name": "file_read", "arguments": {"path": "a"}}</tool_call>'
    )
    assert rendered[2].content == '<tool_result name="file_read">\nA!\n</tool_result>\n\nthanks'
    assert all(not m.tool_calls and m.tool_call_id is None for m in rendered)


@pytest.mark.parametrize("streamed", [False, True])
async def test_wrapper_turns_text_blocks_into_tool_calls(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder, streamed: bool
) -> None:
    openai_fake.queue_text(
        'I will read it.\n<tool_call>{"name": "file_read", "arguments": {"path": "a.md"}}'
        "</tool_call>"
    )
    provider = TextProtocolProvider(make_openai(model="smollm2"))
    request = CompletionRequest(
        system="Be brief.", messages=[ChatMessage(role="user", content="read a.md")], tools=[READ]
    )
    reply = await provider.complete(request, stream=sink if streamed else None)

    assert reply.text == "I will read it."
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("file_read", {"path": "a.md"})
    ]
    assert reply.finish_reason == "tool_calls"
    body = openai_fake.requests[0].body
    assert "tools" not in body
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Be brief.\n\n# Tools")
    assert "file_read" in system["content"]
    if streamed:
        assert "tool_call" not in sink.text
        assert sink.text.strip() == "I will read it."


async def test_wrapper_passes_plain_text_and_malformed_blocks(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sink: SinkRecorder
) -> None:
    openai_fake.queue_text("No tools needed <b>really</b> <tool")
    openai_fake.queue_text('<tool_call>{"name": "file_read", "arguments": {oops}}</tool_call>')
    provider = TextProtocolProvider(make_openai(model="smollm2"))
    request = CompletionRequest(
        system="", messages=[ChatMessage(role="user", content="q")], tools=[READ]
    )

    plain = await provider.complete(request, stream=sink)
    broken = await provider.complete(request)

    assert plain.text == "No tools needed <b>really</b> <tool"
    assert plain.tool_calls == ()
    assert sink.text == "No tools needed <b>really</b> <tool"
    assert broken.text == ""
    assert [(c.name, c.arguments) for c in broken.tool_calls] == [
        ("file_read", '{"name": "file_read", "arguments": {oops}}')
    ]
