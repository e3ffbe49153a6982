"""``hatchway db migrate-to URL`` through the real parser and handler: a real SQLite file with
rows from every repository copied into an empty, migrated PostgreSQL database (``tests/pg.py``)
in one transaction; the same records read back through the PostgreSQL store, ids continuing
after the highest copied, a target with rows refused, and a row that does not fit leaving the
target empty."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from bot.cli import main
from bot.store import Store
from bot.store.grants import NewGrant
from bot.store.pairings import PairingRecord
from bot.store.rate_limits import SavedBucket
from bot.store.usage import UsageGrouping
from bot.store.web import NewSignIn
from tests.pg import PASSWORD, PgServer
from tests.store.records import (
    approval_row,
    audit_row,
    envelope,
    job,
    saved_file,
    turn,
)

FILLED = (
    "approvals",
    "attachments",
    "audit",
    "budget_notices",
    "channel_state",
    "grants",
    "inbox",
    "memory",
    "messages",
    "outbox",
    "pairings",
    "rate_limit_buckets",
    "retention_marks",
    "schedules",
    "sessions",
    "tool_calls",
    "usage",
    "web_rate_counters",
    "web_sessions",
    "web_sign_ins",
)
"""The tables the file below has rows in (every repository's)."""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "hatchway.toml"
    path.write_text(f'state_dir = "{tmp_path}"\n', encoding="utf-8")
    return path


async def hatchway(
    config: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*args, "--config", str(config)])
    out, err = capsys.readouterr()
    return code, out, err


async def fill(store: Store, files: Path) -> None:
    """Rows in every table, written by the repositories as the daemon writes them."""
    now = time.time()
    group = envelope("1001", "-100", "1", text="deploy the staging server")
    await turn(store, group)
    await turn(store, envelope("2002", "2002", "2", text="private", direct=True))
    await approval_row(store, "ap-1", requester="1001", conversation="-100")
    await audit_row(store, requester="1001", decided_by="2002", at=now - 400 * 86400)
    await audit_row(store, requester="2002", decided_by="runtime", at=now)
    await store.grants.create(
        NewGrant(tool="shell", scope="global", scope_key="", granted_by="2002", created_at=now)
    )
    await store.pairings.create(
        PairingRecord(
            code="ABCD",
            channel="telegram.main",
            user_id="3003",
            display_name="Cy",
            status="pending",
            created_at=now,
            expires_at=now + 600,
        )
    )
    await store.channel_state.set("telegram.main", "offset", "41")
    await store.memory.add(scope_key="conversation:telegram.main:-100", content="deploys on Tue")
    await store.memory.add(scope_key="conversation:telegram.main:-100", content="staging is eu-1")
    await job(store, "job-1", creator="1001", conversation="-100")
    await saved_file(store, files, group, "notes.txt", at=now)
    await store.rate_limits.save(
        [SavedBucket(bucket="user:telegram.main:1001", tokens=0.5, updated_at=now)]
    )
    await store.retention.record_run(now)
    await store.retention.prune_audit(now - 365 * 86400)  # records its cutoff, deletes one row
    await store.usage.notice_once(
        channel="telegram.main",
        conversation_id="-100",
        budget="user day",
        window_start=now - 60,
        at=now,
        turn_id="t-1",
    )
    await store.web.add_sign_in(
        NewSignIn(
            token_hash="t" * 64,
            code_hash=None,
            identity="telegram:2002",
            created_at=now,
            expires_at=now + 300,
        )
    )
    await store.web.open_session("s" * 64, "telegram:2002", now=now, expires_at=now + 3600)
    await store.web.count("client:127.0.0.1", now=now, window_s=60)


async def counts(store: Store, tables: list[str]) -> dict[str, int]:
    found = {}
    for table in tables:
        row = await store.db.fetchone(f"SELECT COUNT(*) AS n FROM {table}")
        assert row is not None
        found[table] = int(row["n"])
    return found


async def tables_of(store: Store) -> list[str]:
    rows = await store.db.fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND name NOT LIKE 'memory_fts%' ORDER BY name"
    )
    return [str(r["name"]) for r in rows]


@pytest.mark.usefixtures("kept_logging")
async def test_every_row_moves_and_reads_back_the_same(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str], pg_empty_url: str
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await fill(store, tmp_path)
        tables = await tables_of(store)
        before = await counts(store, tables)
        history = await store.history.load("telegram.main:-100")
        audit = await store.audit.since()
        approvals = await store.approvals.list()
        attachment = await store.attachments.get("notes.txt")
        usage = await store.usage.summary(UsageGrouping.USER, since=0)
        buckets = await store.rate_limits.load()
        schedules = await store.schedules.list()
    assert all(before[t] > 0 for t in FILLED), before

    code, out, err = await hatchway(config, capsys, "db", "migrate-to", pg_empty_url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"copying {tmp_path / 'hatchway.db'} into {pg_empty_url}"
    for table in tables:
        assert any(line.split() == [table, str(before[table])] for line in lines), table
    assert f"copied {sum(before.values())} rows of {len(tables)} tables" in out

    async with await Store.open_postgres(pg_empty_url) as moved:
        assert await counts(moved, tables) == before
        assert await moved.history.load("telegram.main:-100") == history
        assert await moved.audit.since() == audit
        assert await moved.approvals.list() == approvals
        assert await moved.attachments.get("notes.txt") == attachment
        assert await moved.usage.summary(UsageGrouping.USER, since=0) == usage
        assert await moved.rate_limits.load() == buckets
        assert await moved.schedules.list() == schedules
        assert await moved.channel_state.get("telegram.main", "offset") == "41"
        assert await moved.pairings.get("ABCD") is not None
        found = await moved.memory.search(
            scope_key="conversation:telegram.main:-100", query="staging"
        )
        assert [n.content for n in found] == ["staging is eu-1"]
        # ids go on after the highest copied
        note = await moved.memory.add(scope_key="s", content="new")
        assert note == 3
        assert (
            await audit_row(moved, requester="x", decided_by="y", at=1.0)
            == max(e.id for e in audit) + 1
        )


@pytest.mark.usefixtures("kept_logging")
async def test_a_database_with_rows_is_refused(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str], pg_url: str
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.channel_state.set("telegram.main", "offset", "41")
    async with await Store.open_postgres(pg_url) as target:
        await target.channel_state.set("telegram.main", "offset", "7")
    code, _out, err = await hatchway(config, capsys, "db", "migrate-to", pg_url)
    assert code == 1
    assert "is not empty (table channel_state has rows)" in err
    async with await Store.open_postgres(pg_url) as target:
        assert await target.channel_state.get("telegram.main", "offset") == "7"


@pytest.mark.usefixtures("kept_logging")
async def test_a_row_that_does_not_fit_leaves_the_target_empty(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str], pg_empty_url: str
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await fill(store, tmp_path)
        # SQLite keeps text that is not a number in an INTEGER column; PostgreSQL will not
        await store.db.execute("UPDATE usage SET input_tokens = 'lots'")
    code, _out, err = await hatchway(config, capsys, "db", "migrate-to", pg_empty_url)
    assert code == 1
    assert f"cannot copy into database {pg_empty_url}" in err
    async with await Store.open_postgres(pg_empty_url) as target:
        tables = ["inbox", "messages", "audit", "memory", "usage"]
        assert await counts(target, tables) == dict.fromkeys(tables, 0)


@pytest.mark.usefixtures("kept_logging")
async def test_the_password_comes_from_the_environment(
    tmp_path: Path,
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pg_server: PgServer,
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.channel_state.set("telegram.main", "offset", "41")
    name = pg_server.create_database()
    pg_server.admin(f'ALTER DATABASE "{name}" OWNER TO hatchway')
    url = pg_server.url(name, user="hatchway")
    try:
        code, out, err = await hatchway(
            config, capsys, "db", "migrate-to", url.replace("hatchway@", f"hatchway:{PASSWORD}@")
        )
        assert code == 2 and "must not hold the password" in err and PASSWORD not in err + out
        monkeypatch.setenv("MOVE_PASSWORD", PASSWORD)
        code, out, err = await hatchway(
            config, capsys, "db", "migrate-to", url, "--password-env", "MOVE_PASSWORD"
        )
        assert code == 0, err
        assert PASSWORD not in out + err
        async with await Store.open_postgres(url, password=PASSWORD) as moved:
            assert await moved.channel_state.get("telegram.main", "offset") == "41"
    finally:
        pg_server.drop_database(name)


@pytest.mark.usefixtures("kept_logging")
async def test_a_url_with_a_bad_port_is_refused_clearly(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.channel_state.set("telegram.main", "offset", "41")
    code, out, err = await hatchway(
        config, capsys, "db", "migrate-to", "postgresql://hatchway@db.internal:54x2/hatchway"
    )
    assert code == 2 and out == ""
    assert "no valid port" in err and "Traceback" not in err


@pytest.mark.usefixtures("kept_logging")
async def test_a_url_on_a_unix_socket_is_the_one_to_configure(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str], pg_server: PgServer
) -> None:
    async with await Store.open(tmp_path / "hatchway.db") as store:
        await store.channel_state.set("telegram.main", "offset", "41")
    name = pg_server.create_database()
    url = f"postgresql://postgres@/{name}?host={pg_server.data}&port={pg_server.port}"
    try:
        code, out, err = await hatchway(config, capsys, "db", "migrate-to", url)
        assert code == 0, err
        (advice,) = [line for line in out.splitlines() if line.startswith("next: ")]
        assert f'[storage] url = "{url}"' in advice  # the socket kept: the URL that works
        async with await Store.open_postgres(url) as moved:
            assert await moved.channel_state.get("telegram.main", "offset") == "41"
    finally:
        pg_server.drop_database(name)
