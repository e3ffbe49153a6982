"""Saved attachments deleted ``attachments.keep_days`` after they arrived.

:func:`prune_attachments` is the one deletion by age: the rows older than the cutoff with
their files (:meth:`bot.store.attachments.Attachments.delete_older_than`), then any file
left in ``<state_dir>/attachments`` older than the cutoff that no row names any more (a
crash between download and record, a failed unlink). The App runs it at start and every
:data:`PRUNE_EVERY_S` (:func:`prune_periodically`); a daily retention job may call it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import structlog

from bot.config.attachments import AttachmentsConfig
from bot.errors import StorageError
from bot.store import Store

log = structlog.get_logger(__name__)

DAY_S = 86_400.0
PRUNE_EVERY_S = 6 * 3600.0


async def prune_attachments(
    store: Store, *, now: float, keep_days: float, folder: Path | None = None
) -> int:
    """Delete attachments older than ``keep_days`` days before ``now`` (seconds since the
    epoch): rows and their files, then stray files in ``folder`` (``<state_dir>/
    attachments``) last changed before the cutoff. Returns the rows and stray files
    deleted. StorageError when the database refuses."""
    cutoff = now - keep_days * DAY_S
    deleted = await store.attachments.delete_older_than(cutoff)
    if folder is not None:
        deleted += await asyncio.to_thread(_sweep, folder, cutoff)
    if deleted:
        log.info("attachments_pruned", deleted=deleted, keep_days=keep_days)
    return deleted


def _sweep(folder: Path, cutoff: float) -> int:
    """Files directly in ``folder`` changed before ``cutoff``, deleted (symlinks and
    folders left alone: nothing here makes them)."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
    return removed


async def prune_periodically(
    store: Store,
    *,
    config: Callable[[], AttachmentsConfig],
    folder: Path,
    clock: Callable[[], float],
    every_s: float = PRUNE_EVERY_S,
) -> None:
    """Run :func:`prune_attachments` now and every ``every_s`` seconds until cancelled; a
    failure is logged and tried again at the next round (config read each round)."""
    while True:
        try:
            await prune_attachments(store, now=clock(), keep_days=config().keep_days, folder=folder)
        except StorageError as exc:
            log.warning("attachments_prune_failed", error=str(exc))
        await asyncio.sleep(every_s)
