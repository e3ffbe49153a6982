"""MCP tools as :class:`~bot.tools.spec.ToolSpec` values.

A server's tool ``search`` on server ``docs`` becomes ``docs__search`` (characters outside
``[A-Za-z0-9_-]`` become ``_``; at most 64 characters, the providers' limit). Policy comes
from the server's config: every MCP tool requires approval unless the server sets
``requires_approval = false`` or lists the tool in ``auto_approve`` (the server's own tool
name or the wrapped name; fnmatch patterns allowed). The approval policy's own lists
(``[approval] auto_approve`` / ``always_ask`` / ``deny``) apply on top, by wrapped name.

The handler calls the server through its :class:`~bot.mcp.connection.McpConnection` and
turns the result into text: text blocks joined, other blocks summarised, structured content
as JSON when there is no text. A result flagged ``isError`` is a failed execution.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from bot.config import McpServerConfig
from bot.mcp.connection import McpCallFailed, McpConnection, RemoteTool
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

SEPARATOR = "__"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def wrapped_name(server: str, tool: str) -> str:
    """``server__tool`` with unsafe characters replaced, cut to the providers' limit."""
    return _UNSAFE.sub("_", f"{server}{SEPARATOR}{tool}")[:MAX_NAME_CHARS]


def needs_approval(config: McpServerConfig, server: str, tool: str) -> bool:
    if not config.requires_approval:
        return False
    names = (tool, wrapped_name(server, tool))
    return not any(fnmatchcase(n, p) for n in names for p in config.auto_approve)


def parameters_of(tool: RemoteTool) -> dict[str, object]:
    """The tool's input schema as the model sees it (always an object schema)."""
    schema = dict(tool.input_schema)
    schema.setdefault("type", "object")
    schema.pop("title", None)
    if "properties" not in schema:
        schema["properties"] = {}
    return schema


def result_text(result: CallToolResult) -> str:
    """The text the model sees for a call result."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            parts.append(
                f"[{type(block).__name__.removesuffix('Content').lower()}: {block.mime_type}]"
            )
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[resource {resource.uri}]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[link {block.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    return "\n".join(parts)


def tool_spec(
    connection: McpConnection, tool: RemoteTool, *, timeout_s: float | None = None
) -> ToolSpec:
    """Wrap one remote tool. The spec's ``parameters`` object is built once here, so the
    registry's compiled validator is reused across turns."""
    server, config = connection.name, connection.config
    remote_name = tool.name

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        result = await connection.call(remote_name, arguments)
        text = result_text(result)
        if result.is_error:
            raise McpCallFailed(text or f"{remote_name} reported an error")
        return text

    description = f"[{server}] {tool.description}".strip()
    return ToolSpec(
        name=wrapped_name(server, tool.name),
        description=description[:MAX_DESCRIPTION_CHARS],
        parameters=parameters_of(tool),
        handler=handler,
        requires_approval=needs_approval(config, server, tool.name),
        kind=ToolKind.READ_ONLY if tool.read_only else ToolKind.EXECUTE,
        timeout_s=timeout_s if timeout_s is not None else config.call_timeout_s,
    )
