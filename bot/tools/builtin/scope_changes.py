"""The start-up announcement of data a scope leaves out of reach.

``tools.workspace.scope`` and ``tools.memory.scope`` default to ``conversation``; before they
existed every conversation shared one workspace folder and, per configured channel, one set of
notes. An install from then keeps its files directly in the workspace root and its notes
under ``channel:`` keys, where no turn of a narrower scope finds them. Nothing is moved or
deleted: :func:`announce_scope_changes` logs one ``warning`` for each (``workspace_scope_changed``,
``memory_scope_changed``) at every start while that is so, naming the key that brings the old
behaviour back; docs/operations.md ("Upgrading") says how to move instead.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import structlog

from bot.config import ToolsConfig
from bot.store.memory import MemoryNotes
from bot.tools.builtin.memory import SHARED_KEY
from bot.tools.builtin.scopes import DEFAULT_AGENT, SCOPE_DIRS

log = structlog.get_logger(__name__)

SHOWN_ENTRIES = 5


def loose_entries(root: Path) -> list[str]:
    """Names directly in ``root`` that are not scope folders, sorted ([] when the root is
    missing or unreadable)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(name for name in names if name not in SCOPE_DIRS)


def memory_prefix(scope: str, *, agent: str = DEFAULT_AGENT) -> str:
    """The ``scope_key`` prefix every note reachable in ``scope`` starts with."""
    if scope == "agent":
        return f"agent:{agent}"
    if scope == "shared":
        return SHARED_KEY
    return f"{scope}:"


async def announce_scope_changes(
    tools: ToolsConfig, *, workspace: Path, notes: MemoryNotes
) -> None:
    """Warn about workspace files and memory notes the configured scopes cannot reach."""
    scope = tools.workspace.scope
    if scope != "shared":
        loose = await asyncio.to_thread(loose_entries, workspace)
        if loose:
            log.warning(
                "workspace_scope_changed",
                scope=scope,
                root=str(workspace),
                unreachable_entries=len(loose),
                examples=loose[:SHOWN_ENTRIES],
                problem=(
                    f"tools.workspace.scope is {scope!r}: each turn sees only its {scope}'s "
                    f"folder under {workspace}, so the files left directly in it (from when "
                    "every conversation shared it) are out of reach of every turn"
                ),
                fix=(
                    'set tools.workspace.scope = "shared" to keep one workspace for all '
                    "conversations, or move the files into the folder of the conversation "
                    "that should have them (docs/operations.md, Upgrading)"
                ),
            )
    if tools.memory.enabled:
        prefix = memory_prefix(tools.memory.scope)
        elsewhere = await notes.count_outside(prefix)
        if elsewhere:
            log.warning(
                "memory_scope_changed",
                scope=tools.memory.scope,
                unreachable_notes=elsewhere,
                problem=(
                    f"tools.memory.scope is {tools.memory.scope!r}; {elsewhere} notes were "
                    "stored under another scope and memory_recall no longer finds them"
                ),
                fix=(
                    'set tools.memory.scope = "channel" to recall the notes kept per channel '
                    "before scopes (or the scope they were stored under)"
                ),
            )
