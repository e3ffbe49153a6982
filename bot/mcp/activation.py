"""Deferred activation: which MCP tools the model is shown, and ``tool_search``.

With many MCP tools the model would spend most of its context on schemas it does not need.
The rules, per turn and per iteration (``[mcp]`` in ``hatchway.toml``):

* a tool matched by a ``tool_filter_groups`` entry with ``mode = "always"`` is always shown;
* a tool matched by a ``mode = "keyword"`` group is shown when one of the group's keywords
  appears in the message (case-insensitive), and is otherwise hidden;
* any other MCP tool is shown while the number of MCP tools is at most
  ``deferred_threshold``, and hidden above it;
* a hidden tool is shown for the rest of the turn once ``tool_search`` activated it
  (ranked by :mod:`bot.mcp.ranking`; a tool must be relevant enough to be activated);
* ``tool_search`` itself is offered only while some MCP tool is hidden.

Hidden tools stay runnable (approval and policy apply as usual); hiding only keeps their
schemas out of the request. ``tool_search`` is in the pipeline's sequential set, so a batch
containing it runs in order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from fnmatch import fnmatchcase

import structlog
from pydantic import Field

from bot.config import McpConfig, McpToolFilterGroup
from bot.mcp.ranking import SearchIndex, terms
from bot.providers.base import ToolDefinition
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec

log = structlog.get_logger(__name__)

TOOL_SEARCH = "tool_search"


class ToolSearchArguments(ToolArguments):
    query: str = Field(
        min_length=1, max_length=200, description="Words describing the capability needed."
    )


def _one_line(description: str, limit: int = 200) -> str:
    line = " ".join(description.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _matches(name: str, group: McpToolFilterGroup) -> bool:
    return any(name == p or fnmatchcase(name, p) for p in group.tools)


def _triggered(group: McpToolFilterGroup, text: str) -> bool:
    lowered = text.lower()
    return any(k.lower() in lowered for k in group.keywords if k)


class ToolActivation:
    """Visibility of MCP tools per turn. ``mcp_tools`` returns the current MCP specs."""

    def __init__(self, config: McpConfig, mcp_tools: Callable[[], Sequence[ToolSpec]]) -> None:
        self._config = config
        self._mcp_tools = mcp_tools
        self._active: dict[str, set[str]] = {}
        self._index = SearchIndex()

    def update_settings(self, config: McpConfig) -> None:
        self._config = config

    def visible(self, name: str, *, turn_id: str, text: str, deferring: bool) -> bool:
        """Whether the MCP tool ``name`` is shown in this turn now."""
        if name in self._active.get(turn_id, ()):
            return True
        keyword_group = False
        for group in self._config.tool_filter_groups:
            if not _matches(name, group):
                continue
            if group.mode == "always":
                return True
            keyword_group = True
            if _triggered(group, text):
                return True
        return not keyword_group and not deferring

    def deferring(self, count: int) -> bool:
        """True when ``count`` MCP tools are too many to show them all."""
        return count > self._config.deferred_threshold

    def may_hide(self, names: Collection[str]) -> bool:
        """Whether any of ``names`` can be hidden in some turn (so ``tool_search`` exists)."""
        if not names:
            return False
        return self.deferring(len(names)) or any(
            g.mode == "keyword" and any(_matches(n, g) for n in names)
            for g in self._config.tool_filter_groups
        )

    def offered(
        self,
        *,
        turn_id: str,
        text: str,
        definitions: Sequence[ToolDefinition],
        mcp_names: Collection[str],
    ) -> list[ToolDefinition]:
        deferring = self.deferring(len(mcp_names))
        shown: list[ToolDefinition] = []
        hidden = 0
        search: ToolDefinition | None = None
        for definition in definitions:
            if definition.name == TOOL_SEARCH:
                search = definition
            elif definition.name not in mcp_names or self.visible(
                definition.name, turn_id=turn_id, text=text, deferring=deferring
            ):
                shown.append(definition)
            else:
                hidden += 1
        if hidden and search is not None:
            shown.append(search)
        return shown

    def finish_turn(self, turn_id: str) -> None:
        self._active.pop(turn_id, None)

    def search(self, query: str, turn_id: str) -> list[ToolSpec]:
        """Activate the MCP tools relevant to ``query`` for the turn (:mod:`bot.mcp.ranking`,
        at most ``search_limit``); returns them, best first."""
        found = self._index.ranked(query, self._mcp_tools(), self._config.search_limit)
        if turn_id:
            self._active.setdefault(turn_id, set()).update(s.name for s in found)
        log.info("mcp_tools_activated", query_terms=len(terms(query)), activated=len(found))
        return found

    def search_tool(self) -> ToolSpec:
        """The ``tool_search`` spec."""

        async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
            args = parse_arguments(ToolSearchArguments, arguments)
            found = self.search(args.query, context.turn_id)
            if not found:
                return "No tools match that query; try other words."
            lines = [f"- {s.name}: {_one_line(s.description)}" for s in found]
            return "Activated these tools for this turn; call them directly:\n" + "\n".join(lines)

        return ToolSpec(
            name=TOOL_SEARCH,
            description=(
                "Find and activate more tools (from connected tool servers) by describing "
                "what you need; the matching tools become callable in your next step."
            ),
            parameters=schema_of(ToolSearchArguments),
            handler=handler,
            requires_approval=False,
            kind=ToolKind.READ_ONLY,
            dedup_exempt=True,
        )
