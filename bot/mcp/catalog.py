"""The MCP catalog: every configured server's connection and tools, for the agent.

:class:`McpCatalog` implements :class:`bot.agent.turn.DynamicTools`: ``specs`` returns the
wrapped tools of every server that has listed its tools at least once (a server that is
restarting keeps its tools; calls to them are ENV_ERROR until it is back) plus
``tool_search`` when some MCP tool can be hidden; ``offered`` and ``finish_turn`` apply
:class:`~bot.mcp.activation.ToolActivation`.

:meth:`McpCatalog.run` supervises every enabled server in one task group and lives until
cancelled; the daemon starts it with its other long-running tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TextIO

import structlog

from bot.config import McpConfig
from bot.mcp.activation import TOOL_SEARCH, ToolActivation
from bot.mcp.adapter import tool_spec
from bot.mcp.connection import McpConnection, ServerState
from bot.providers.base import ToolDefinition
from bot.tools.spec import ToolSpec

log = structlog.get_logger(__name__)


class McpCatalog:
    """Connections to the configured MCP servers and their tools as specs."""

    def __init__(
        self,
        config: McpConfig,
        *,
        environ: Mapping[str, str] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        self.connections: dict[str, McpConnection] = {
            name: McpConnection(
                name, server, environ=environ, errlog=errlog, on_tools=self._refresh
            )
            for name, server in config.servers.items()
            if server.enabled
        }
        self._specs: dict[str, tuple[ToolSpec, ...]] = {}
        self._mcp_names: frozenset[str] = frozenset()
        self._activation = ToolActivation(config, self.mcp_specs)
        self._search = self._activation.search_tool()

    def update_settings(self, config: McpConfig) -> None:
        """Apply reloaded filter groups and threshold; server definitions need a restart."""
        self._activation.update_settings(config)

    async def run(self) -> None:
        """Supervise every server until cancelled."""
        if not self.connections:
            return
        async with asyncio.TaskGroup() as group:
            for name, connection in self.connections.items():
                group.create_task(connection.run(), name=f"mcp:{name}")

    async def wait_ready(self) -> None:
        """Return once every server has connected (tests; health checks)."""
        for connection in self.connections.values():
            await connection.wait_ready()

    def status(self) -> dict[str, ServerState]:
        return {name: c.state for name, c in self.connections.items()}

    def _refresh(self, connection: McpConnection) -> None:
        """A server (re)listed its tools: rebuild its specs (others keep theirs)."""
        taken = {s.name for n, specs in self._specs.items() if n != connection.name for s in specs}
        built: list[ToolSpec] = []
        previous = {s.name: s for s in self._specs.get(connection.name, ())}
        for remote in connection.tools:
            spec = tool_spec(connection, remote)
            if spec.name in taken or spec.name == TOOL_SEARCH:
                log.warning("mcp_tool_name_clash", server=connection.name, tool=spec.name)
                continue
            old = previous.get(spec.name)
            # keep the old spec object when nothing changed: its compiled validator is cached
            if (
                old is not None
                and old.parameters == spec.parameters
                and (old.description == spec.description)
            ):
                spec = old
            taken.add(spec.name)
            built.append(spec)
        self._specs[connection.name] = tuple(built)
        self._mcp_names = frozenset(s.name for specs in self._specs.values() for s in specs)

    # -- DynamicTools --------------------------------------------------------------------

    def mcp_specs(self) -> list[ToolSpec]:
        """Every wrapped MCP tool currently known, in server order."""
        return [spec for specs in self._specs.values() for spec in specs]

    def specs(self) -> Sequence[ToolSpec]:
        tools = self.mcp_specs()
        if self._activation.may_hide(self._mcp_names):
            tools.append(self._search)
        return tools

    def offered(
        self, *, turn_id: str, text: str, definitions: Sequence[ToolDefinition]
    ) -> Sequence[ToolDefinition]:
        if not self._mcp_names:
            return definitions
        return self._activation.offered(
            turn_id=turn_id, text=text, definitions=definitions, mcp_names=self._mcp_names
        )

    def finish_turn(self, turn_id: str) -> None:
        self._activation.finish_turn(turn_id)
