"""An agent's tools: ``allowed_tools`` and ``excluded_tools`` applied to what it may offer.

Entries are tool names, shell-style patterns (``file_*``), or ``mcp:<server>`` for every
tool of one MCP server (its tools are named ``<server>__<tool>``; the server is matched by
the spec's ``origin``, which the MCP adapter sets to ``MCP server <name>``). With
``allowed_tools`` set, only tools it names are kept; ``excluded_tools`` then removes tools.
The built-in tools are filtered once, when the agent's bundle is built; MCP tools come and go
while the daemon runs, so :class:`FilteredTools` filters them each time a turn asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bot.agent.turn import DynamicTools
from bot.config import AgentConfig
from bot.config.agents import MCP_PREFIX
from bot.providers.base import ToolDefinition
from bot.tools.spec import ToolSpec

#: How the MCP adapter names a tool's origin (bot.mcp.adapter.tool_spec).
MCP_ORIGIN = "MCP server "


def _named(spec: ToolSpec, entries: tuple[str, ...]) -> bool:
    for entry in entries:
        if entry.startswith(MCP_PREFIX):
            if spec.origin == MCP_ORIGIN + entry.removeprefix(MCP_PREFIX):
                return True
        elif spec.name == entry or fnmatchcase(spec.name, entry):
            return True
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFilter:
    """What an agent's ``allowed_tools`` (None: everything) and ``excluded_tools`` let it
    offer."""

    allowed: tuple[str, ...] | None = None
    excluded: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: AgentConfig) -> ToolFilter:
        allowed = None if config.allowed_tools is None else tuple(config.allowed_tools)
        return cls(allowed=allowed, excluded=tuple(config.excluded_tools))

    @property
    def narrows(self) -> bool:
        return self.allowed is not None or bool(self.excluded)

    def allows(self, spec: ToolSpec) -> bool:
        if self.allowed is not None and not _named(spec, self.allowed):
            return False
        return not _named(spec, self.excluded)

    def kept(self, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        return [spec for spec in specs if self.allows(spec)]


class FilteredTools:
    """:class:`~bot.agent.turn.DynamicTools` narrowed by a :class:`ToolFilter`. The
    catalog's own tools (no origin: ``tool_search``) stay while any MCP tool is kept, so
    that an allowed server's deferred tools can still be found."""

    def __init__(self, inner: DynamicTools, tools: ToolFilter) -> None:
        self._inner = inner
        self._filter = tools

    def specs(self) -> Sequence[ToolSpec]:
        specs = self._inner.specs()
        kept = [s for s in specs if s.origin.startswith(MCP_ORIGIN) and self._filter.allows(s)]
        if kept:
            kept += [s for s in specs if not s.origin and not _excluded(self._filter, s)]
        return kept

    def offered(
        self, *, turn_id: str, text: str, definitions: Sequence[ToolDefinition]
    ) -> Sequence[ToolDefinition]:
        return self._inner.offered(turn_id=turn_id, text=text, definitions=definitions)

    def finish_turn(self, turn_id: str) -> None:
        self._inner.finish_turn(turn_id)


def _excluded(tools: ToolFilter, spec: ToolSpec) -> bool:
    return _named(spec, tools.excluded)


def filtered(dynamic: DynamicTools | None, tools: ToolFilter) -> DynamicTools | None:
    """``dynamic`` as the agent sees it."""
    if dynamic is None or not tools.narrows:
        return dynamic
    return FilteredTools(dynamic, tools)
