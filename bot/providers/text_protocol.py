"""The text tool protocol, for models without native tool calling.

The model is told, in the system prompt, to write each call as::

    <tool_call>{"name": "file_read", "arguments": {"path": "notes.md"}}</tool_call>

:func:`parse_tool_calls` turns such blocks back into :class:`ToolCallRequest` values with
generated ids. It never raises: a block that is not valid JSON still becomes a call (name
guessed, or ``""``; the raw block kept as its arguments) so the tool pipeline records it
NOT_EXECUTED and tells the model what was wrong. :class:`TextProtocolProvider` wraps any
provider so the rest of hatchway sees native-looking tool calls either way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from bot.providers.base import (
    ChatMessage,
    CompletionRequest,
    Provider,
    ProviderReply,
    Role,
    StreamSink,
    ToolCallRequest,
    ToolDefinition,
)
from bot.providers.call_id import new_call_id
from bot.providers.surrogates import clean_reply

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_NAME_GUESS = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')

_INSTRUCTIONS = """\
# Tools

You can call the tools listed below. To call one, write a block exactly like this, with the
arguments as a JSON object matching the tool's parameters:

<tool_call>{"name": "TOOL_NAME", "arguments": {"ARG": "VALUE"}}</tool_call>

Write one block per call; several blocks call several tools. After your calls, stop and wait:
each result comes back in a <tool_result> block. Never write a <tool_result> yourself and
never claim a tool ran before you have its result. When no tool is needed, answer normally.

Available tools:
"""


def render_tool_instructions(tools: Sequence[ToolDefinition]) -> str:
    """The system-prompt section that teaches the protocol and lists ``tools``."""
    lines = [_INSTRUCTIONS]
    for tool in tools:
        schema = json.dumps(tool.parameters, ensure_ascii=False, sort_keys=True)
        lines.append(f"- {tool.name}: {tool.description}\n  parameters: {schema}")
    return "\n".join(lines)


def _call_from_block(body: str) -> ToolCallRequest:
    inner = body.strip()
    fenced = _FENCE.match(inner)
    if fenced:
        inner = fenced.group(1)
    try:
        data = json.loads(inner)
    except ValueError:
        guess = _NAME_GUESS.search(inner)
        return ToolCallRequest(
            id=new_call_id(), name=guess.group(1) if guess else "", arguments=inner
        )
    if not isinstance(data, dict):
        return ToolCallRequest(id=new_call_id(), name="", arguments=inner)
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCallRequest(
        id=new_call_id(), name=name if isinstance(name, str) else "", arguments=raw
    )


def parse_tool_calls(text: str) -> tuple[str, list[ToolCallRequest]]:
    """Split a model's text into what the user should see and the tool calls it wrote.

    An unterminated final block (the model stopped mid-call) still counts as a block.
    """
    calls = [_call_from_block(match.group(1)) for match in _BLOCK.finditer(text)]
    if not calls:
        return text.strip(), []
    visible = _BLOCK.sub("", text)
    return re.sub(r"\n{3,}", "\n\n", visible).strip(), calls


def render_call(call: ToolCallRequest) -> str:
    """One past call as the model would have written it."""
    try:
        arguments: object = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    payload = json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False)
    return f"{OPEN_TAG}{payload}{CLOSE_TAG}"


def render_history(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """History with tool calls and results as plain text, roles alternating where they can.

    Assistant tool calls become ``<tool_call>`` blocks after the assistant's text; tool results
    become ``<tool_result>`` blocks in a user message. Consecutive same-role messages merge,
    because many local chat templates reject two user messages in a row. Images stay with
    the user message they are rendered into (a tool result's too): the wrapped provider sends
    them if its model reads images, and drops them otherwise.
    """
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    out: list[ChatMessage] = []
    for message in messages:
        role: Role
        images = message.images if message.role in ("user", "tool") else ()
        if message.role == "tool":
            name = message.name or names.get(message.tool_call_id or "", "")
            role = "user"
            content = f'<tool_result name="{name}">\n{message.content}\n</tool_result>'
        elif message.role == "assistant" and message.tool_calls:
            role = "assistant"
            rendered = "\n".join(render_call(call) for call in message.tool_calls)
            content = f"{message.content}\n{rendered}" if message.content else rendered
        else:
            role, content = message.role, message.content
        if out and out[-1].role == role and role != "system":
            merged = f"{out[-1].content}\n\n{content}"
            out[-1] = ChatMessage(role=role, content=merged, images=(*out[-1].images, *images))
        else:
            out.append(ChatMessage(role=role, content=content, images=images))
    return out


class _VisibleTextFilter:
    """Forwards streamed text to a sink minus ``<tool_call>`` blocks.

    Text that could be the start of an opening tag is held back until it is decided.
    """

    def __init__(self, sink: StreamSink) -> None:
        self._sink = sink
        self._pending = ""
        self._inside = False

    async def write(self, delta: str) -> None:
        self._pending += delta
        out: list[str] = []
        while self._pending:
            if self._inside:
                end = self._pending.find(CLOSE_TAG)
                if end < 0:
                    self._pending = self._pending[-(len(CLOSE_TAG) - 1) :]
                    break
                self._pending = self._pending[end + len(CLOSE_TAG) :]
                self._inside = False
                continue
            start = self._pending.find(OPEN_TAG)
            if start >= 0:
                out.append(self._pending[:start])
                self._pending = self._pending[start + len(OPEN_TAG) :]
                self._inside = True
                continue
            keep = _partial_tag_suffix(self._pending)
            out.append(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            break
        text = "".join(out)
        if text:
            await self._sink(text)

    async def flush(self) -> None:
        """Forward text held back for a possible tag once the stream is over."""
        if self._pending and not self._inside:
            pending, self._pending = self._pending, ""
            await self._sink(pending)


def _partial_tag_suffix(text: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of the opening tag."""
    for size in range(min(len(OPEN_TAG) - 1, len(text)), 0, -1):
        if OPEN_TAG.startswith(text[-size:]):
            return size
    return 0


class TextProtocolProvider:
    """Wraps a provider whose model has no native tool calling.

    Tools are described in the system prompt instead of the API's ``tools`` field, past calls
    and results are rendered as text, and the reply's ``<tool_call>`` blocks come back as
    :class:`ToolCallRequest` values. Stream sinks never see the blocks.
    """

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        system = request.system
        if request.tools:
            instructions = render_tool_instructions(request.tools)
            system = f"{system}\n\n{instructions}" if system else instructions
        inner_request = CompletionRequest(
            system=system,
            messages=render_history(request.messages),
            tools=(),
            max_tokens=request.max_tokens,
            response_schema=request.response_schema,
        )
        visible_filter = _VisibleTextFilter(stream) if stream is not None else None
        sink = visible_filter.write if visible_filter is not None else None
        reply = await self.inner.complete(inner_request, stream=sink)
        if visible_filter is not None:
            await visible_filter.flush()
        visible, parsed = parse_tool_calls(reply.text)
        # Some servers extract tool calls from the text themselves and return them natively:
        # honour those too, so that no call the model made is silently dropped.
        calls = [*reply.tool_calls, *parsed]
        # the inner reply is clean, but a call block's JSON escapes can decode to lone
        # surrogates
        return clean_reply(
            ProviderReply(
                text=visible,
                tool_calls=tuple(calls),
                usage=reply.usage,
                finish_reason="tool_calls" if calls else reply.finish_reason,
                model=reply.model,
            )
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
