"""Run inside a mount namespace where each folder given is a small tmpfs of its own (see
``test_full_disk.py``): fill each one up to ``free`` bytes, open a store there, and print
what happened as one JSON line per folder: the error the opening raised, the schema version
the file was left at, and (with the filler removed) the version and integrity check of
opening it again.

Usage: ``python -m tests.store.sqlite.full_disk FOLDER:FREE …``
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from pathlib import Path

from bot.errors import StorageError
from bot.store import Store

MARK = "full-disk-result"
"""Starts each result line (the store logs to stdout too)."""


def fill(folder: Path, free: int) -> Path:
    """A file taking all of ``folder``'s space but ``free`` bytes."""
    stats = os.statvfs(folder)
    filler = folder / "filler"
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - free))
    return filler


def user_version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


async def attempt(folder: Path, free: int) -> dict[str, object]:
    filler = fill(folder, free)
    path = folder / "h.db"
    error: str | None = None
    try:
        store = await Store.open(path)
    except StorageError as exc:
        error = str(exc)
    else:
        await store.aclose()
    filler.unlink()
    left_at = user_version(path)
    async with await Store.open(path) as store:
        reopened = await store.schema_version()
        integrity = await store.integrity_check()
    return {
        "free": free,
        "error": error,
        "left_at": left_at,
        "reopened": reopened,
        "integrity": integrity,
    }


async def main(places: list[str]) -> None:
    for place in places:
        folder, _, free = place.rpartition(":")
        print(MARK, json.dumps(await attempt(Path(folder), int(free))), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
