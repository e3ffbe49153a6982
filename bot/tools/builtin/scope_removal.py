"""Removing a conversation's workspace folder (forgetting a person's direct conversation, or a
conversation): the files the tools and the shell wrote there go with it.

Only the ``conversation`` scope gives a conversation a folder of its own
(:func:`~bot.tools.builtin.scopes.scope_folder`); under ``agent`` or ``shared`` the files of
many conversations live together and nothing is removed. A folder that is a symbolic link
is left alone (nothing the daemon creates is one), and so is anything outside the root.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import structlog

from bot.tools.builtin.scopes import WorkspaceScope, scope_folder

log = structlog.get_logger(__name__)


def _remove(folder: Path, dry_run: bool = False) -> int:
    """Remove ``folder`` and everything in it; how many files there were (``dry_run``: only
    count them)."""
    if folder.is_symlink() or not folder.is_dir():
        return 0
    files = sum(len(names) for _dir, _subdirs, names in os.walk(folder))
    if dry_run:
        return files
    try:
        shutil.rmtree(folder)
    except OSError as exc:
        log.warning("workspace_folder_not_removed", folder=str(folder), error=str(exc))
        return 0
    return files


async def remove_conversation_folders(
    root: Path,
    scope: WorkspaceScope,
    conversations: Sequence[tuple[str, str]],
    *,
    dry_run: bool = False,
) -> int:
    """Remove the workspace folders of ``conversations`` (``(kind.alias, conversation id)``)
    under ``root`` when ``scope`` gives each one of its own; the number of files removed
    (``dry_run``: that would be, nothing removed)."""
    if scope != "conversation":
        return 0
    folders = [
        root / scope_folder("conversation", channel=channel, conversation_id=conversation)
        for channel, conversation in conversations
    ]
    counts = await asyncio.gather(
        *(asyncio.to_thread(_remove, folder, dry_run) for folder in folders)
    )
    return sum(counts)
