"""MCP tools as :class:`~bot.tools.spec.ToolSpec` values.

A server's tool ``search`` on server ``docs`` becomes ``docs__search``; its name, description
and input schema are sanitised first (:mod:`bot.mcp.sanitise`: characters providers refuse
replaced, at most 64 characters; the description cleaned, capped and marked
``[from MCP server docs]``; the schema rebuilt from known keywords, or the tool refused).
Policy comes from the server's config: every MCP tool requires approval unless the server
sets ``requires_approval = false`` or lists the tool in ``auto_approve`` (the server's own
tool name or the wrapped name; fnmatch patterns allowed). The approval policy's own lists
(``[approval] auto_approve`` / ``always_ask`` / ``deny``) apply on top, by wrapped name.

The handler calls the server through its :class:`~bot.mcp.connection.McpConnection` by the
server's own tool name and turns the result into text: text blocks joined, other blocks
summarised, structured content as JSON when there is no text. A result flagged ``isError``
is a failed execution.
"""

from __future__ import annotations

import json
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
from bot.mcp.sanitise import Refusal, clean_schema, marked, usable_name, wrapped_name
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

__all__ = ["needs_approval", "result_text", "tool_spec", "wrapped_name"]


def needs_approval(config: McpServerConfig, server: str, tool: str) -> bool:
    if not config.requires_approval:
        return False
    names = (tool, wrapped_name(server, tool))
    return not any(fnmatchcase(n, p) for n in names for p in config.auto_approve)


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
) -> ToolSpec | Refusal:
    """Wrap one remote tool, or say why it cannot be offered. The spec's ``parameters``
    object is built once here, so the registry's compiled validator is reused across turns."""
    server, config = connection.name, connection.config
    remote_name = tool.name
    if not usable_name(remote_name):
        return Refusal("the name has no letter or digit providers accept")
    parameters = clean_schema(tool.input_schema)
    if isinstance(parameters, Refusal):
        return parameters

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        result = await connection.call(remote_name, arguments)
        text = result_text(result)
        if result.is_error:
            raise McpCallFailed(text or f"{remote_name} reported an error")
        return text

    return ToolSpec(
        name=wrapped_name(server, remote_name),
        description=marked(server, tool.description),
        parameters=parameters,
        handler=handler,
        requires_approval=needs_approval(config, server, remote_name),
        kind=ToolKind.READ_ONLY if tool.read_only else ToolKind.EXECUTE,
        timeout_s=timeout_s if timeout_s is not None else config.call_timeout_s,
        origin=f"MCP server {server}",
    )
