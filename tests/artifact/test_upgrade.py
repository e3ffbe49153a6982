"""Upgrades from every release: its database, written by that release
(``scripts/upgrade_fixtures.py``, ``tests/artifact/upgrades/<tag>/``), is migrated by the
installed artifact at start, on SQLite and on PostgreSQL (the release's ``pg_dump`` loaded
into a fresh database), and the conversation goes on: a new message is answered with the old
history before it, and what the old release kept (audit rows, grants, notes, jobs) is still
there. Every release keeps these fixtures and adds its own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path

import asyncpg
import pytest

from tests.artifact.conftest import LLM_KEY, TOKEN
from tests.artifact.installed import IMAGE_UID, Installed, Place
from tests.artifact.test_smoke import write_config
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import WAIT_S
from tests.pg import PgServer, free_port
from tests.reliability.routed_llm import RoutedOpenAI

pytestmark = pytest.mark.artifact

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
RELEASES = sorted(p for p in (HERE / "upgrades").iterdir() if p.is_dir())
OWNER = 5005  # the fixtures' user (scripts/upgrade_fixtures.py)
SECRETS = {"SMOKE_TG_TOKEN": TOKEN, "SMOKE_LLM_KEY": LLM_KEY}
#: what the release kept that must outlive the upgrade, at least as many rows
DURABLE = ("audit", "grants", "memory", "schedules", "messages", "tool_calls", "usage")


def latest(engine: str) -> int:
    return max(int(p.name[:4]) for p in (ROOT / f"bot/store/{engine}/migrations").glob("*.sql"))


def kept_rows(release: Path) -> dict[str, int]:
    rows: dict[str, int] = json.loads((release / "rows.json").read_text(encoding="utf-8"))
    return rows


def test_every_release_has_its_fixtures() -> None:
    assert [p.name for p in RELEASES][:1] == ["v0.1.0"]
    for release in RELEASES:
        rows = kept_rows(release)
        assert rows and all(count > 0 for count in rows.values()), rows
        assert (release / "hatchway.db").is_file() and (release / "postgres.sql").is_file()


async def go_on(installed: Installed, place: Place, tg: FakeTelegram, llm: RoutedOpenAI) -> None:
    """The upgraded daemon answers the old conversation, its history included, and stops."""
    # the release confirmed Telegram updates up to its offset: later ones have higher ids
    tg._update_ids = itertools.count(1_000_000)
    llm.route_text("q-upgrade", "A-upgrade")
    async with installed.daemon(place, extra=SECRETS) as daemon:
        await daemon.wait_event("daemon_ready")
        chat, owner = private_chat(OWNER), user(OWNER, "Owner")
        await tg.push({"message": message(chat, owner, "q-upgrade", message_id=100_001)})
        try:
            await tg.wait_for(
                "sendMessage", lambda c: c.params.get("text") == "A-upgrade", wait_s=WAIT_S
            )
        except TimeoutError:
            tail = "\n".join(json.dumps(e) for e in daemon.events[-40:])
            raise AssertionError(f"no answer after the upgrade; last events:\n{tail}") from None
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    [asked] = [r for r in llm.requests if "q-upgrade" in json.dumps(r.body["messages"])]
    assert "A-hello" in json.dumps(asked.body["messages"])  # the release's history


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
async def test_sqlite_database_of_a_release_is_migrated_and_answers(
    installed: Installed,
    place: Place,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    release: Path,
) -> None:
    db = place.state / "hatchway.db"
    shutil.copyfile(release / "hatchway.db", db)
    if installed.in_image:
        os.chown(db, IMAGE_UID, IMAGE_UID)
    write_config(place, tg=tg, llm=llm, port=free_port(), owner=OWNER)
    await go_on(installed, place, tg, llm)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == latest("sqlite")
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for table, count in kept_rows(release).items():
            if table in DURABLE:
                found = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                assert found >= count, (table, found, count)


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
async def test_postgres_dump_of_a_release_is_migrated_and_answers(
    installed: Installed,
    place: Place,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    pg_server: PgServer,
    pg_empty_url: str,
    release: Path,
) -> None:
    await asyncio.to_thread(
        subprocess.run,
        [
            str(pg_server.bin_dir / "psql"),
            "--quiet",
            "--set",
            "ON_ERROR_STOP=1",
            "--dbname",
            pg_empty_url,
            "--file",
            str(release / "postgres.sql"),
        ],
        check=True,
        capture_output=True,
    )
    write_config(
        place,
        tg=tg,
        llm=llm,
        port=free_port(),
        storage=f'\n[storage]\nurl = "{pg_empty_url}"\n',
        owner=OWNER,
    )
    await go_on(installed, place, tg, llm)
    conn = await asyncpg.connect(pg_empty_url)
    try:
        assert await conn.fetchval("SELECT MAX(number) FROM schema_migrations") == latest(
            "postgres"
        )
        for table, count in kept_rows(release).items():
            if table in DURABLE:
                found = await conn.fetchval(f"SELECT COUNT(*) FROM {table}")
                assert found >= count, (table, found, count)
    finally:
        await conn.close()
