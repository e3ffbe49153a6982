"""The database check: the SQLite file opens, passes ``PRAGMA integrity_check`` and accepts a
write.

A file that does not exist yet passes when its nearest existing directory is writable (the
daemon creates it at start); the check never creates it. A database that cannot be opened
raises :class:`~bot.errors.HatchwayError`, which the driver reports.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from bot.commands.doctor.report import Outcome


async def database_check(path: Path) -> Outcome:
    """Whether the database at ``path`` is sound and writable (or can be created)."""
    if not await asyncio.to_thread(path.exists):
        parent = _existing_parent(path)
        if os.access(parent, os.W_OK):
            return True, f"{path} does not exist yet; it will be created at start", ""
        return (
            False,
            f"{path} does not exist and {parent} is not writable",
            ("create the directory and give the service user write access"),
        )
    from bot.store import Store

    async with await Store.open(path) as store:
        integrity = await store.integrity_check()
        version = await store.schema_version()
        if integrity != "ok":
            return (
                False,
                f"integrity_check: {integrity}",
                ("stop the service and restore the latest backup (docs/operations.md)"),
            )
        await store.check_writable()
    return True, f"{path} ok (schema {version}, integrity ok, writable)", ""


def _existing_parent(path: Path) -> Path:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent
