"""Wrapping remote tools: names, policy from config, result text."""

from __future__ import annotations

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from pydantic import ValidationError

from bot.config import McpServerConfig
from bot.mcp.adapter import URI_CHARS, needs_approval, result_text, wrapped_name
from tests.mcp.conftest import output


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("docs", "search", "docs__search"),
        ("my.server", "get file", "my_server__get_file"),
        ("s", "x" * 100, ("s__" + "x" * 100)[:64]),
    ],
)
def test_wrapped_names(server: str, tool: str, expected: str) -> None:
    assert wrapped_name(server, tool) == expected


@pytest.mark.parametrize(
    ("config", "tool", "needed"),
    [
        ({}, "search", True),
        ({"auto_approve": ["search"]}, "search", False),
        ({"auto_approve": ["docs__search"]}, "search", False),
        ({"auto_approve": ["get_*"]}, "get_page", False),
        ({"auto_approve": ["get_*"]}, "delete_page", True),
        ({"requires_approval": False}, "delete_page", False),
    ],
)
def test_approval_policy_from_config(config: dict[str, object], tool: str, needed: bool) -> None:
    server = McpServerConfig.model_validate({"command": ["srv"], **config})
    assert needs_approval(server, "docs", tool) is needed


def test_server_needs_exactly_one_transport() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        McpServerConfig()
    with pytest.raises(ValidationError, match="exactly one"):
        McpServerConfig(command=["srv"], url="http://127.0.0.1/mcp")


def test_result_text_joins_blocks_and_summarises_others() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="line one"),
            ImageContent(type="image", data="AAAA", mime_type="image/png"),
            TextContent(type="text", text="line two"),
        ]
    )
    assert result_text(result, server="docs", tool="docs__get") == output(
        "docs__get", "line one\n[image: image/png]\nline two"
    )


def test_structured_content_when_there_is_no_text() -> None:
    result = CallToolResult(content=[], structured_content={"b": 1, "a": 2})
    assert result_text(result, server="docs", tool="docs__get") == output(
        "docs__get", '{"a": 2, "b": 1}'
    )


def test_an_empty_result_is_no_text() -> None:
    assert result_text(CallToolResult(content=[]), server="docs", tool="docs__get") == ""


def test_a_resource_is_named_by_its_uri_as_a_person_would_see_it() -> None:
    uri = "file:///a\u202etxt.exe" + "x" * 400
    result = CallToolResult(
        content=[
            EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, text="body"))
        ]
    )
    text = result_text(result, server="docs", tool="docs__get")
    label = text.split('"')[1]
    assert label.startswith("resource file:///a\\u202etxt.exe")
    assert label.endswith("… from MCP server docs")
    assert len(label) == len("resource ") + URI_CHARS + len(" from MCP server docs")
    assert "\u202e" not in text


async def test_a_nested_argument_is_laid_out_on_the_card_not_a_json_blob() -> None:
    from bot.approval.summary import MASKED_NOTE, describe
    from bot.mcp.adapter import nested_preview
    from tests.tools.harness import make_context

    arguments: dict[str, object] = {
        "query": "deploy",
        "options": {"dry_run": False, "api_key": "sk-abcdefghijklmnopqrstuv", "n": 3},
        "tags": ["a", "b"],
        "empty": {},
        "password": {"x": 1},
    }
    shown = await nested_preview(arguments, make_context())
    assert shown.covers == ("options", "tags")
    view = describe(arguments, diff=shown.diff, covered=shown.covers)
    assert view.lines == (
        "empty: {}",
        f"password: ***  {MASKED_NOTE}",
        "query: deploy",
        f"options (laid out, 5 lines):  {MASKED_NOTE}",
        "| {",
        '|   "dry_run": false,',
        '|   "api_key": "***",',
        '|   "n": 3',
        "| }",
        "tags (laid out, 4 lines):",
        "| [",
        '|   "a",',
        '|   "b"',
        "| ]",
    )
    assert "abcdefghijklmnop" not in view.full
