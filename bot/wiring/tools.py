"""The daemon's tools: the built-in catalog, the MCP catalog, and the workspace folder a
turn's attachments are saved to.

The catalog is built again on a reload (:meth:`bot.app.App.reload`), from the settings given;
what reads the settings per call (the outbox, the attachments' folder) reads them live.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from bot.config import Settings
from bot.outbox import ChannelOutbox
from bot.schedules.book import ScheduleBook
from bot.schedules.tools import schedule_tools
from bot.store import Store
from bot.tools.builtin import builtin_tools
from bot.tools.builtin.sandbox import Confinement
from bot.tools.builtin.workspace import Workspace, workspace_root
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolSpec
from bot.turn import TurnIdentity

if TYPE_CHECKING:
    from bot.mcp.catalog import McpCatalog

log = structlog.get_logger(__name__)


def build_tools(
    settings: Settings,
    *,
    store: Store,
    outbox: ChannelOutbox,
    book: ScheduleBook,
    clock: Callable[[], float],
    config_file: Path | None,
) -> list[ToolSpec]:
    """Every enabled built-in, then the schedule tools over ``book`` when schedules are on;
    the shell's sandbox hides the state directory and ``config_file``."""
    tools = builtin_tools(
        settings.tools,
        store=store,
        outbox=outbox,
        workspace=workspace_root(settings),
        confinement=Confinement.of(settings, config_file=config_file),
    )
    if settings.schedules.enabled:
        tools += schedule_tools(book, allows=outbox.allows, clock=clock)
    return tools


def build_mcp(settings: Settings) -> McpCatalog | None:
    """The MCP catalog, only when a server is configured: the MCP SDK takes about a
    second to import, which a bot without MCP servers should not pay at start-up."""
    if not any(server.enabled for server in settings.mcp.servers.values()):
        return None
    from bot.mcp.catalog import McpCatalog

    return McpCatalog(settings.mcp)


def attachment_workspace(settings: Settings, turn: TurnIdentity) -> Path | None:
    """The folder of ``turn``'s workspace that its file tools see (its
    ``tools.workspace.scope`` folder), where the files its message came with are
    saved; None when it cannot be made."""
    config = settings.tools.workspace
    root = workspace_root(settings)
    workspace = Workspace(
        root=root, allow_sensitive_files=config.allow_sensitive_files, scope=config.scope
    )
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return workspace.for_call(ToolContext(turn=turn)).real_root()
    except (OSError, ToolEnvironmentError) as exc:
        log.warning("attachment_workspace_unavailable", error=str(exc))
        return None
