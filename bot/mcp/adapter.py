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
summarised, structured content as JSON when there is no text. Everything the server wrote is
marked as data that is not the user's (:func:`bot.untrusted.untrusted`), like a fetched page
or an attached file: the tool's output in one block named by the wrapped tool name, an
embedded text resource in a block of its own named by its URI. A result flagged ``isError``
is a failed execution whose first line, written here, says so; the server's message follows,
marked the same way.

On an approval card an argument that is an object or a list is laid out one member a line
(:func:`nested_preview`, :mod:`bot.tools.laid_out`) instead of one line of compact JSON.
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

from bot.approval.summary import MASKED_NOTE
from bot.config import McpServerConfig
from bot.mcp.connection import McpCallFailed, McpConnection, RemoteTool
from bot.mcp.sanitise import Refusal, clean_schema, marked, usable_name, wrapped_name
from bot.scrub import is_secret_key
from bot.tools.laid_out import json_lines
from bot.tools.spec import CallPreview, ToolContext, ToolKind, ToolResult, ToolSpec
from bot.untrusted import untrusted
from bot.visible_text import visible

__all__ = [
    "error_text",
    "needs_approval",
    "nested_preview",
    "output_source",
    "resource_source",
    "result_text",
    "tool_spec",
    "wrapped_name",
]


def nested_lines(arguments: Mapping[str, object]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The card's lines for the arguments that are a non-empty object or list (each one's
    ``NAME (laid out):`` line, then its members a line each after ``| ``), and their names.
    The masked marker follows a line whose value hid a secret."""
    lines: list[str] = []
    covered: list[str] = []
    for name in sorted(arguments):
        value = arguments[name]
        if not isinstance(value, Mapping | list) or not value or is_secret_key(name):
            continue  # plain values stay argument lines; a secret key's value is masked whole
        shown, masked = json_lines(value)
        note = f"  {MASKED_NOTE}" if masked else ""
        lines += [f"{name} (laid out, {len(shown):,} lines):{note}", *(f"| {s}" for s in shown)]
        covered.append(name)
    return tuple(lines), tuple(covered)


async def nested_preview(arguments: Mapping[str, object], context: ToolContext) -> CallPreview:
    """What an MCP tool's card shows of its nested arguments (:func:`nested_lines`)."""
    lines, covered = nested_lines(arguments)
    return CallPreview(diff=lines, covers=covered)


def needs_approval(config: McpServerConfig, server: str, tool: str) -> bool:
    if not config.requires_approval:
        return False
    names = (tool, wrapped_name(server, tool))
    return not any(fnmatchcase(n, p) for n in names for p in config.auto_approve)


#: The longest resource URI shown in a data block's name.
URI_CHARS = 200


def output_source(tool: str) -> str:
    """How a tool's output is named in its data block, by the tool's wrapped name
    (``MCP tool docs__search``): the server's own name for it may hold any character."""
    return f"MCP tool {tool}"


def resource_source(server: str, uri: str) -> str:
    """How an embedded resource is named: its URI as a person would see it, capped."""
    shown = visible(uri)
    if len(shown) > URI_CHARS:
        shown = shown[: URI_CHARS - 1] + "…"
    return f"resource {shown} from MCP server {server}"


def result_text(result: CallToolResult, *, server: str, tool: str) -> str:
    """The text the model sees for a call result of ``tool`` (its wrapped name): the
    server's words in data blocks (one for the tool's output, one per embedded text
    resource, in the order sent); ``""`` when the result holds nothing."""
    blocks: list[str] = []
    output: list[str] = []

    def flush() -> None:
        if output:
            blocks.append(untrusted(output_source(tool), "\n".join(output)))
            output.clear()

    for block in result.content:
        if isinstance(block, TextContent):
            output.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            output.append(
                f"[{type(block).__name__.removesuffix('Content').lower()}: {block.mime_type}]"
            )
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                flush()
                blocks.append(untrusted(resource_source(server, resource.uri), resource.text))
            else:
                output.append(f"[resource {resource.uri}]")
        elif isinstance(block, ResourceLink):
            output.append(f"[link {block.uri}]")
    if not blocks and not output and result.structured_content is not None:
        output.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    flush()
    return "\n".join(blocks)


def error_text(result: CallToolResult, *, server: str, tool: str) -> str:
    """What a result flagged ``isError`` becomes: a line of ours naming the tool, then the
    server's message as data (the line alone when the server sent none)."""
    head = f"the MCP tool {tool} reported an error"
    body = result_text(result, server=server, tool=tool)
    return f"{head}:\n{body}" if body else head


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
    name = wrapped_name(server, remote_name)

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        result = await connection.call(remote_name, arguments)
        if result.is_error:
            raise McpCallFailed(error_text(result, server=server, tool=name))
        return result_text(result, server=server, tool=name)

    return ToolSpec(
        name=name,
        description=marked(server, tool.description),
        parameters=parameters,
        handler=handler,
        requires_approval=needs_approval(config, server, remote_name),
        kind=ToolKind.READ_ONLY if tool.read_only else ToolKind.EXECUTE,
        timeout_s=timeout_s if timeout_s is not None else config.call_timeout_s,
        origin=f"MCP server {server}",
        approval_preview=nested_preview,
    )
