"""The migrated template that new SQLite files in tests start from (``tests/sqlite_template.py``)
is what opening a new file builds."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.store import Store


def _schema(path: Path) -> tuple[object, ...]:
    with sqlite3.connect(f"{path.absolute().as_uri()}?immutable=1", uri=True) as conn:
        objects = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
        pragmas = [
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("user_version", "auto_vacuum", "journal_mode")
        ]
    conn.close()
    return sorted(objects), pragmas


def _applied(logs: list[dict[str, object]]) -> list[object]:
    return [e["migration"] for e in logs if e["event"] == "db_migration_applying"]


@pytest.mark.fresh_sqlite
async def test_a_new_file_has_the_templates_schema(tmp_path: Path, migrated_sqlite: Path) -> None:
    fresh = tmp_path / "fresh.db"
    with capture_logs() as logs:
        async with await Store.open(fresh):
            pass
    assert _schema(fresh) == _schema(migrated_sqlite)
    assert len(_applied(logs)) == _schema(fresh)[1][0] > 0  # every migration, applied here


async def test_outside_fresh_sqlite_a_new_file_is_the_templates_copy(
    tmp_path: Path, migrated_sqlite: Path
) -> None:
    copied = tmp_path / "copied.db"
    with capture_logs() as logs:
        async with await Store.open(copied):
            pass
    assert _schema(copied) == _schema(migrated_sqlite)
    assert _applied(logs) == []
    assert copied.stat().st_mode & 0o777 == 0o600
