"""The built-in tools and their catalog.

:func:`builtin_tools` is the one place that decides which built-ins exist for a daemon and
with which policy: it reads ``[tools]`` from ``hatchway.toml`` and returns plain
:class:`~bot.tools.spec.ToolSpec` values for the registry. Every built-in lives in its own
module; see ``docs/tools.md`` ("Built-in tools") for their defaults.
"""

from __future__ import annotations

from pathlib import Path

from bot.config import ToolsConfig
from bot.store import Store
from bot.tools.builtin.attachment_viewing import view_attachment_tool
from bot.tools.builtin.calculator import calculator_tool
from bot.tools.builtin.clock import current_time_tool
from bot.tools.builtin.file_reading import file_list_tool, file_read_tool, file_search_tool
from bot.tools.builtin.file_sending import FileOutbox, send_file_tool
from bot.tools.builtin.file_writing import file_edit_tool, file_write_tool
from bot.tools.builtin.memory import memory_recall_tool, memory_store_tool
from bot.tools.builtin.messaging import Outbox, send_message_tool
from bot.tools.builtin.sandbox import Confinement
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolSpec

__all__ = ["Outbox", "builtin_tools"]


def builtin_tools(
    tools_config: ToolsConfig,
    *,
    store: Store,
    outbox: Outbox | None,
    workspace: Path,
    confinement: Confinement | None = None,
) -> list[ToolSpec]:
    """Every enabled built-in, in a stable order.

    ``workspace`` is the resolved workspace root (the daemon resolves
    ``tools.workspace.path`` against its state directory); it is created if missing, and
    each call works in its ``tools.workspace.scope`` folder under it.
    ``send_message`` is included only with an ``outbox``, ``send_file`` only with one that
    also uploads files (a :class:`FileOutbox`) and with the file tools enabled;
    ``view_attachment`` always; ``web_search`` only with a ``tools.web_search.backend``
    (a hosted backend without its key raises ``ConfigError``). ``confinement`` names the daemon's
    files that ``shell``'s sandbox hides and the channels' network modes. A bad
    ``tools.shell.deny_patterns`` regex, or ``tools.shell.sandbox = "bwrap"`` where
    bubblewrap cannot run, raises ``ConfigError``.
    """
    workspace.mkdir(mode=0o700, parents=True, exist_ok=True)
    ws = Workspace(
        root=workspace,
        allow_sensitive_files=tools_config.workspace.allow_sensitive_files,
        scope=tools_config.workspace.scope,
    )
    tools = [current_time_tool(), calculator_tool()]
    files = tools_config.files
    if files.enabled:
        tools += [
            file_read_tool(ws, files),
            file_list_tool(ws, files),
            file_search_tool(ws, files),
            file_write_tool(ws, files),
            file_edit_tool(ws, files),
        ]
    tools.append(view_attachment_tool(store.attachments, ws))
    if tools_config.shell.enabled:
        tools.append(shell_tool(ws, tools_config.shell, confinement=confinement))
    if tools_config.http_fetch.enabled:
        # aiohttp is imported with the tool that needs it, not with this package (whose
        # helper modules, e.g. ``arguments``, are imported by every tool module).
        from bot.tools.builtin.http_fetch import http_fetch_tool

        tools.append(http_fetch_tool(tools_config.http_fetch))
    if tools_config.web_search.backend != "none":
        from bot.tools.builtin.search_backends import backend_for
        from bot.tools.builtin.web_search import web_search_tool

        backend = backend_for(tools_config.web_search)
        if backend is not None:
            tools.append(web_search_tool(tools_config.web_search, backend))
    if tools_config.memory.enabled:
        tools += [
            memory_store_tool(store.memory, tools_config.memory),
            memory_recall_tool(store.memory, tools_config.memory),
        ]
    if outbox is not None:
        tools.append(send_message_tool(outbox))
        if files.enabled and isinstance(outbox, FileOutbox):
            tools.append(send_file_tool(outbox, ws))
    return tools
