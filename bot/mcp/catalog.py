"""The MCP catalog: every configured server's connection and tools, for the agent.

:class:`McpCatalog` implements :class:`bot.agent.turn.DynamicTools`: ``specs`` returns the
wrapped tools of every server that has listed its tools at least once (a server that is
restarting keeps its tools; calls to them are ENV_ERROR until it is back) plus
``tool_search`` when some MCP tool can be hidden; ``offered`` and ``finish_turn`` apply
:class:`~bot.mcp.activation.ToolActivation`.

:meth:`McpCatalog.run` supervises every enabled server in one task group and lives until
cancelled; the daemon starts it with its other long-running tasks. Each listing a server
sends is wrapped (:mod:`bot.mcp.adapter`, :mod:`bot.mcp.sanitise`) on a worker thread, at
most the server's ``max_tools`` of it, and installed on the event loop (a turn that starts
before a server's first listing was wrapped wraps it at once, so listed tools are offered):
a refused tool or a name clash is dropped with a log line (``mcp_tool_refused``,
``mcp_tool_name_clash``), a listing over the cap is cut with one (``mcp_tools_capped``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence

import structlog

from bot.config import McpConfig
from bot.mcp.activation import TOOL_SEARCH, ToolActivation
from bot.mcp.adapter import tool_spec
from bot.mcp.connection import McpConnection, RemoteTool, ServerState
from bot.mcp.sanitise import Refusal
from bot.providers.base import ToolDefinition
from bot.tools.spec import ToolSpec
from bot.visible_text import visible

log = structlog.get_logger(__name__)

#: One listed tool: the server's own name for it, and its spec or why it was refused.
Wrapped = tuple[str, ToolSpec | Refusal]


def wrap_listing(connection: McpConnection, listed: Sequence[RemoteTool]) -> list[Wrapped]:
    """Every listed tool wrapped or refused (:func:`bot.mcp.adapter.tool_spec`); runs on a
    worker thread, so it only reads."""
    wrapped: list[Wrapped] = []
    for remote in listed:
        try:
            spec = tool_spec(connection, remote)
        except Exception as exc:
            # Boundary: a listing is third-party data; one tool that breaks the sanitiser
            # is refused, never the catalog's task (and with it every server).
            spec = Refusal(f"could not be read ({type(exc).__name__})")
        wrapped.append((remote.name, spec))
    return wrapped


class McpCatalog:
    """Connections to the configured MCP servers and their tools as specs."""

    def __init__(
        self,
        config: McpConfig,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.connections: dict[str, McpConnection] = {
            name: McpConnection(name, server, environ=environ, on_tools=self._listed)
            for name, server in config.servers.items()
            if server.enabled
        }
        self._specs: dict[str, tuple[ToolSpec, ...]] = {}
        self._dropped: dict[str, set[str]] = {}
        self._mcp_names: frozenset[str] = frozenset()
        self._activation = ToolActivation(config, self.mcp_specs)
        self._search = self._activation.search_tool()
        self._pending: dict[str, McpConnection] = {}
        self._relisted = asyncio.Event()
        self._installed = asyncio.Condition()
        self._built_from: dict[str, tuple[RemoteTool, ...]] = {}

    def update_settings(self, config: McpConfig) -> None:
        """Apply reloaded filter groups and threshold; server definitions need a restart."""
        self._activation.update_settings(config)

    async def run(self) -> None:
        """Supervise every server, and wrap each listing they send, until cancelled."""
        if not self.connections:
            return
        async with asyncio.TaskGroup() as group:
            group.create_task(self._wrap_listings(), name="mcp:listings")
            for name, connection in self.connections.items():
                group.create_task(connection.run(), name=f"mcp:{name}")

    async def wait_ready(self) -> None:
        """Return once every server has connected and its tools are wrapped (tests; health
        checks)."""
        for connection in self.connections.values():
            await connection.wait_ready()
        async with self._installed:
            await self._installed.wait_for(self._wrapped_all)

    def _wrapped_all(self) -> bool:
        return all(self._built_from.get(n) is c.tools for n, c in self.connections.items())

    def status(self) -> dict[str, ServerState]:
        return {name: c.state for name, c in self.connections.items()}

    def _listed(self, connection: McpConnection) -> None:
        """A server (re)listed its tools (called by its connection; must not block)."""
        self._pending[connection.name] = connection
        self._relisted.set()

    async def _wrap_listings(self) -> None:
        """Wrap each new listing off the event loop (sanitising and checking a hundred
        schemas takes a noticeable fraction of a second), then install it here."""
        while True:
            await self._relisted.wait()
            self._relisted.clear()
            pending, self._pending = self._pending, {}
            for server, connection in pending.items():
                listed = connection.tools
                if self._built_from.get(server) is listed:
                    continue  # wrapped at once by specs() meanwhile
                capped = listed[: connection.config.max_tools]
                built = await asyncio.to_thread(wrap_listing, connection, capped)
                if self._built_from.get(server) is not listed:
                    self._install(connection, listed, built)
            async with self._installed:
                self._installed.notify_all()

    def _wrap_first_listings(self) -> None:
        """A turn starting between a server's first listing and its wrapping on the worker
        thread wraps that listing here, at once: tools a server listed are offered."""
        for server, connection in self.connections.items():
            listed = connection.tools
            if listed and server not in self._specs:
                capped = listed[: connection.config.max_tools]
                self._install(connection, listed, wrap_listing(connection, capped))

    def _install(
        self, connection: McpConnection, listed: tuple[RemoteTool, ...], built: Sequence[Wrapped]
    ) -> None:
        """Replace the server's specs (others keep theirs). A refused tool, or one whose
        wrapped name another tool already has, is dropped; each drop is logged once while
        the listing keeps it."""
        server, cap = connection.name, connection.config.max_tools
        self._built_from[server] = listed
        if len(listed) > cap:
            log.warning("mcp_tools_capped", server=server, listed=len(listed), kept=cap)
        taken = {s.name for n, specs in self._specs.items() if n != server for s in specs}
        taken.add(TOOL_SEARCH)
        previous = {s.name: s for s in self._specs.get(server, ())}
        logged: Collection[str] = self._dropped.get(server, frozenset())
        self._dropped[server] = set()
        specs: list[ToolSpec] = []
        for remote, spec in built:
            if isinstance(spec, Refusal):
                self._drop(server, remote, "mcp_tool_refused", spec.reason, logged)
                continue
            if spec.name in taken:
                why = f"another tool is already named {spec.name}"
                self._drop(server, remote, "mcp_tool_name_clash", why, logged)
                continue
            old = previous.get(spec.name)
            # keep the old spec object when nothing changed: its compiled validator is cached
            if (
                old is not None
                and old.parameters == spec.parameters
                and old.description == spec.description
                and old.kind is spec.kind
            ):
                spec = old
            taken.add(spec.name)
            specs.append(spec)
        self._specs[server] = tuple(specs)
        self._mcp_names = frozenset(s.name for specs in self._specs.values() for s in specs)

    def _drop(
        self, server: str, remote: str, event: str, why: str, logged: Collection[str]
    ) -> None:
        key = f"{event}\0{remote}\0{why}"
        self._dropped[server].add(key)
        if key not in logged:
            # the server's own name may hold anything: shown escaped and cut
            log.warning(event, server=server, tool=visible(remote[:80]), reason=why)

    # -- DynamicTools --------------------------------------------------------------------

    def mcp_specs(self) -> list[ToolSpec]:
        """Every wrapped MCP tool currently known, in server order."""
        return [spec for specs in self._specs.values() for spec in specs]

    def specs(self) -> Sequence[ToolSpec]:
        self._wrap_first_listings()
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
