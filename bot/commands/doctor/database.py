"""The database check: the SQLite file opens, passes ``PRAGMA integrity_check``, accepts a
write and has a schema this version knows.

The check never changes the schema: pending migrations are reported (a ``⚠`` line saying to
back the file up first), and only the daemon applies them, at its next start. A schema newer
than this version's last migration fails: the file was used by a newer version, and this one
must not run on it. A file that does not exist yet is a ``⚠`` naming the state folder and
the rule that chose it (``--state-dir``, ``HATCHWAY_STATE_DIR``, ``state_dir``, the default)
when its nearest existing directory is writable (the daemon creates it at its first start;
the check before that start passes, and a doctor pointed at the wrong folder says where it
looked); the check never creates it, nor opens anything but an existing file. A database that
cannot be opened raises :class:`~bot.errors.HatchwayError`, which the driver reports. Every
fix names ``storage.path``, the key that chooses the file.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.ops.state import StateLocation

NAME = "database"
KEY = "storage.path"
BACKUP = "back it up first (docs/operations.md, Upgrade)"


async def database_check(settings: Settings, location: StateLocation) -> CheckResult:
    """Whether the SQLite database the settings name is sound and writable (or can be
    created)."""
    path = settings.database_path()
    if not await asyncio.to_thread(path.exists):
        parent = _existing_parent(path)
        where = location.file(settings)
        if os.access(parent, os.W_OK):
            return CheckResult(
                name=NAME,
                ok=True,
                warning=True,
                detail=f"no database yet at {where}; the daemon creates it at its first start",
                fix="if the service has run already, its state is elsewhere: name its folder "
                "with --state-dir, HATCHWAY_STATE_DIR or state_dir (the systemd unit's is "
                "/var/lib/hatchway)",
            )
        return _failed(
            f"no database at {where}, and {parent} is not writable",
            f"create {path.parent} writable by the service user, or set {KEY} (a relative path "
            "is under state_dir, which HATCHWAY_STATE_DIR overrides)",
        )
    from bot.store import Store
    from bot.store.sqlite.schema import migrations

    latest = max((number for number, _, _ in migrations()), default=0)
    async with await Store.open(path, migrate=False, create=False) as store:
        integrity = await store.integrity_check()
        version = await store.schema_version()
        if integrity != "ok":
            return _failed(
                f"{path}: integrity_check: {integrity}",
                f"stop the service and restore the latest backup (docs/operations.md) to the "
                f"file {KEY} names",
            )
        if version > latest:
            return _failed(
                f"{path} has schema {version}, newer than this version knows ({latest}): a "
                "newer hatchway has migrated it",
                f"install that newer version again, or restore the backup taken before it to "
                f"the file {KEY} names (docs/operations.md, Roll back)",
            )
        await store.check_writable()
    if version < latest:
        pending = latest - version
        return CheckResult(
            name=NAME,
            ok=True,
            warning=True,
            detail=f"{path} ok (schema {version}, integrity ok, writable); {pending} "
            f"migration{'s' if pending != 1 else ''} pending, applied at the next start",
            fix=f"{BACKUP}: the file {KEY} names",
        )
    return _passed(f"{path} ok (schema {version}, integrity ok, writable)")


def _passed(detail: str) -> CheckResult:
    return CheckResult(name=NAME, ok=True, detail=detail)


def _failed(detail: str, fix: str) -> CheckResult:
    return CheckResult(name=NAME, ok=False, detail=detail, fix=fix)


def _existing_parent(path: Path) -> Path:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent
