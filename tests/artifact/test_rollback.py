"""Rolling back: a release refuses a database a newer release migrated, at once and saying
so (both schema numbers, its own version, what to do), before it talks to any platform, on
SQLite and on PostgreSQL, exits 2 (which the systemd unit does not restart), and leaves the
database as it was. docs/operations.md ("Roll back")
says what putting back the backup loses.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import asyncpg
import pytest

from tests.artifact.installed import IMAGE_UID, Installed, Place
from tests.artifact.test_smoke import SECRETS, write_config
from tests.artifact.test_upgrade import RELEASES, latest
from tests.fakes.telegram_server import FakeTelegram
from tests.pg import free_port
from tests.reliability.routed_llm import RoutedOpenAI

pytestmark = pytest.mark.artifact

ROOT = Path(__file__).resolve().parents[2]
VERSION = next(
    line.split('"')[1]
    for line in (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    if line.startswith("version = ")
)


def dump(db: Path) -> tuple[int, list[str]]:
    """The file's schema version and every row and definition, as SQL."""
    with sqlite3.connect(db) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        return int(version), list(conn.iterdump())


def refusal(said: str, newer: int, known: int) -> None:
    assert (
        f"has schema {newer}, newer than this version of hatchway ({VERSION}) knows ({known})"
        in said
    ), said
    assert "Roll back" in said


async def test_a_newer_sqlite_schema_is_refused_before_any_platform_call(
    installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI
) -> None:
    db = place.state / "hatchway.db"
    db.write_bytes((RELEASES[-1] / "hatchway.db").read_bytes())
    known = latest("sqlite")
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {known + 1}")  # a newer release's migration
    if installed.in_image:
        os.chown(db, IMAGE_UID, IMAGE_UID)
    before = dump(db)
    write_config(place, tg=tg, llm=llm, port=free_port())
    done = await installed.arun(place, ["run"], extra=SECRETS)
    assert done.returncode == 2, done.stdout + done.stderr  # not restarted by the unit
    refusal(done.stderr, known + 1, known)
    assert tg.calls == [] and llm.requests == []
    assert dump(db) == before  # (the file may be left in WAL mode: a header byte, no row)


async def test_a_newer_postgres_schema_is_refused_before_any_platform_call(
    installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI, pg_url: str
) -> None:
    known = latest("postgres")
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "INSERT INTO schema_migrations (number, name, applied_at) VALUES ($1, $2, 0)",
            known + 1,
            f"{known + 1:04d}_from_a_newer_release.sql",
        )
    finally:
        await conn.close()
    write_config(
        place, tg=tg, llm=llm, port=free_port(), storage=f'\n[storage]\nurl = "{pg_url}"\n'
    )
    done = await installed.arun(place, ["run"], extra=SECRETS)
    assert done.returncode == 2, done.stdout + done.stderr  # not restarted by the unit
    refusal(done.stderr, known + 1, known)
    assert tg.calls == [] and llm.requests == []
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT MAX(number) FROM schema_migrations") == known + 1
    finally:
        await conn.close()
