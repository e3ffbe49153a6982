"""The PostgreSQL engine against a real server (``tests/pg.py``): its errors mapped into the
StorageError tree, interactive transactions that never decide on a stale read, migrations
applied once by concurrent openers, a server restart, a cancelled commit that still
settles, and rows that read as SQLite's do."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bot.errors import StorageBusy, StorageError, StorageIntegrityError, StorageUnavailable
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, CardRef, Resolution
from bot.store.audit import AuditEntry, Decision
from bot.store.postgres import Database, describe, migrations
from bot.store.postgres import connection as pg_connection
from bot.store.statements import Read, Write
from tests.pg import PASSWORD, PgServer, refused_port

LATEST = max(number for number, _, _ in migrations())


@pytest.fixture
async def raw(pg_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection of another process (another replica, an operator's psql)."""
    conn = await asyncpg.connect(pg_url)
    try:
        yield conn
    finally:
        await conn.close()


async def wait_for_lock_waiter(conn: asyncpg.Connection) -> None:
    """Return once a connection of the store waits on a lock."""
    for _ in range(500):
        waiting = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = 'hatchway' AND wait_event_type = 'Lock'"
        )
        if waiting:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the store never waited on the lock")


def approval(approval_id: str) -> ApprovalRecord:
    return ApprovalRecord(
        id=approval_id,
        channel="telegram.main",
        conversation_id="-100",
        thread_id=None,
        session_key="telegram.main:-100",
        requester="1001",
        requester_name="Ann",
        tool="deploy",
        fingerprint="f" * 64,
        summary=("version: v2",),
        ask_reason="",
        created_at=time.time(),
        expires_at=time.time() + 300,
    )


def decision(by: str) -> tuple[Resolution, AuditEntry]:
    at = time.time()
    resolution = Resolution(status=ApprovalStatus.APPROVED, decided_by=by, reason="click", at=at)
    audit = AuditEntry(
        at=at,
        channel="telegram.main",
        conversation_id="-100",
        requester="1001",
        tool="deploy",
        summary="[]",
        fingerprint="f" * 64,
        decision=Decision.APPROVED,
        decided_by=by,
    )
    return resolution, audit


async def test_a_broken_constraint_is_an_integrity_error(pg_store: Store, pg_url: str) -> None:
    insert = "INSERT INTO channel_state (channel, key, value) VALUES ('t.m', 'offset', '1')"
    await pg_store.db.execute(insert)
    with pytest.raises(StorageIntegrityError, match="duplicate key") as err:
        await pg_store.db.execute(insert)
    assert describe(pg_url) in str(err.value) and not err.value.busy


async def test_a_lock_held_past_the_timeout_is_busy(
    pg_url: str, raw: asyncpg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_connection, "LOCK_TIMEOUT_MS", 200)
    async with await Store.open_postgres(pg_url) as store:
        await store.channel_state.set("t.m", "offset", "1")
        async with raw.transaction():
            await raw.execute("SELECT * FROM channel_state FOR UPDATE")
            with pytest.raises(StorageBusy, match="lock timeout") as err:
                await store.channel_state.set("t.m", "offset", "2")
            assert err.value.busy
        await store.channel_state.set("t.m", "offset", "3")  # the lock is gone: it passes
        assert await store.channel_state.get("t.m", "offset") == "3"


async def test_a_decision_never_lands_on_an_approval_decided_meanwhile(
    pg_store: Store, raw: asyncpg.Connection
) -> None:
    """Another replica expires the approval (one statement) while a click's transaction
    has read it as pending: the click's write finds it decided, and nothing of the click is
    written."""
    await pg_store.approvals.create(approval("ap-1"))
    resolution, audit = decision("boss")
    async with raw.transaction():
        await raw.execute("UPDATE approvals SET status = 'expired' WHERE id = 'ap-1'")
        click = asyncio.ensure_future(pg_store.approvals.resolve("ap-1", resolution, audit=audit))
        await wait_for_lock_waiter(raw)  # read as pending, its write waits on the row
    assert await click is False
    record = await pg_store.approvals.get("ap-1")
    assert record is not None and record.status is ApprovalStatus.EXPIRED
    assert await pg_store.audit.since() == []


async def test_a_write_of_other_columns_does_not_disturb_a_decision(pg_store: Store) -> None:
    """A card posted (its refs written to the row) while the click's transaction runs: both
    land, as on SQLite."""
    await pg_store.approvals.create(approval("ap-1"))
    resolution, audit = decision("boss")
    refs = [CardRef(conversation_id="-100", thread_id=None, message_id="m1")]
    won, _ = await asyncio.gather(
        pg_store.approvals.resolve("ap-1", resolution, audit=audit),
        pg_store.approvals.set_card_refs("ap-1", refs),
    )
    record = await pg_store.approvals.get("ap-1")
    assert won and record is not None and record.status is ApprovalStatus.APPROVED
    assert record.card_refs == tuple(refs)


async def test_two_replicas_deciding_one_approval_decide_it_once(pg_url: str) -> None:
    async with await Store.open_postgres(pg_url) as a, await Store.open_postgres(pg_url) as b:
        await a.approvals.create(approval("ap-1"))
        (yes_a, audit_a), (yes_b, audit_b) = decision("boss-a"), decision("boss-b")
        won = await asyncio.gather(
            a.approvals.resolve("ap-1", yes_a, audit=audit_a),
            b.approvals.resolve("ap-1", yes_b, audit=audit_b),
        )
        assert sorted(won) == [False, True]
        record = await a.approvals.get("ap-1")
        assert record is not None
        assert record.decided_by == ("boss-a" if won[0] else "boss-b")
        audit = await a.audit.since()
        assert [e.decided_by for e in audit] == [record.decided_by]


async def test_replicas_starting_together_migrate_once(pg_empty_url: str) -> None:
    opened = await asyncio.gather(*(Database.open(pg_empty_url) for _ in range(3)))
    try:
        assert [await db.schema_version() for db in opened] == [LATEST] * 3
        rows = await opened[0].fetchall(
            "SELECT number, COUNT(*) AS n FROM schema_migrations GROUP BY number ORDER BY number"
        )
        assert [(r["number"], r["n"]) for r in rows] == [(n, 1) for n, _, _ in migrations()]
    finally:
        for db in opened:
            await db.aclose()


async def test_without_migrate_the_schema_is_left_alone(pg_empty_url: str) -> None:
    async with await Database.open(pg_empty_url, migrate=False) as db:
        assert await db.schema_version() == 0
        row = await db.fetchone("SELECT to_regclass('inbox') IS NULL AS missing")
        assert row is not None and row["missing"]
    async with await Database.open(pg_empty_url) as db:
        assert await db.schema_version() == LATEST


async def test_an_unreachable_server_is_unavailable() -> None:
    with refused_port() as port:
        url = f"postgresql://hatchway@127.0.0.1:{port}/hatchway"
        with pytest.raises(StorageUnavailable, match=f"cannot open database {url}"):
            await Store.open_postgres(url)


async def test_a_missing_database_is_an_error_not_an_outage(pg_server: PgServer) -> None:
    url = pg_server.url("no_such_database")
    with pytest.raises(StorageError, match="does not exist") as err:
        await Store.open_postgres(url)
    assert not isinstance(err.value, StorageUnavailable)


async def test_the_password_signs_in_and_never_shows(pg_server: PgServer) -> None:
    name = pg_server.create_database()
    pg_server.admin(f'ALTER DATABASE "{name}" OWNER TO hatchway')
    url = pg_server.url(name, user="hatchway")
    try:
        with pytest.raises(StorageError, match="password authentication failed") as err:
            await Store.open_postgres(url, password="not-" + PASSWORD)
        assert PASSWORD not in str(err.value)
        async with await Store.open_postgres(url, password=PASSWORD) as store:
            assert await store.schema_version() == LATEST
    finally:
        pg_server.drop_database(name)


async def test_a_server_restart_is_an_outage_that_passes(
    pg_server: PgServer, pg_store: Store
) -> None:
    await pg_store.channel_state.set("t.m", "offset", "1")
    pg_server.stop("fast")
    try:
        with pytest.raises(StorageUnavailable):
            await pg_store.channel_state.get("t.m", "offset")
        with pytest.raises(StorageUnavailable):
            await pg_store.check_writable()
    finally:
        pg_server.start()
    await pg_store.check_writable()
    assert await pg_store.channel_state.get("t.m", "offset") == "1"


async def test_a_cancelled_write_still_settles(pg_store: Store, raw: asyncpg.Connection) -> None:
    await pg_store.channel_state.set("t.m", "offset", "1")
    async with raw.transaction():
        await raw.execute("SELECT * FROM channel_state FOR UPDATE")
        task = asyncio.ensure_future(pg_store.channel_state.set("t.m", "offset", "2"))
        await wait_for_lock_waiter(raw)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # still waiting for the lock: the write is not abandoned
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pg_store.channel_state.get("t.m", "offset") == "2"
    await pg_store.check_writable()  # and the connection went back to the pool clean


async def test_a_read_only_server_is_not_writable(pg_server: PgServer, pg_url: str) -> None:
    name = pg_url.rsplit("/", 1)[1]
    pg_server.admin(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    async with await Store.open_postgres(pg_url) as store:
        with pytest.raises(StorageError, match="not writable") as err:
            await store.check_writable()
        assert not isinstance(err.value, StorageUnavailable | StorageBusy)
        with pytest.raises(StorageError, match="read-only transaction"):
            await store.channel_state.set("t.m", "offset", "1")


async def test_rows_read_as_sqlite_rows_do(pg_store: Store) -> None:
    db = pg_store.db
    await db.execute(
        "INSERT INTO usage (at, turn_id, session_key, channel, conversation_id, user_id, agent,"
        " provider, model, input_tokens, output_tokens, cache_write_tokens, cache_read_tokens,"
        " estimated, latency_ms, cost) VALUES (?, 't', 's', 'c', 'v', 'u', 'a', 'p', 'm',"
        " ?, 3, 0, 0, ?, 7, NULL)",
        (1.5, 10, True),
    )
    row = await db.fetchone(
        "SELECT SUM(input_tokens) AS total, AVG(output_tokens) AS mean, COUNT(*) AS n,"
        " MAX(estimated) AS estimated, MAX(at) AS at, MAX(cost) AS cost FROM usage"
    )
    assert row is not None
    assert dict(row) == {"total": 10, "mean": 3.0, "n": 1, "estimated": 1, "at": 1.5, "cost": None}
    assert [type(row[i]) for i in range(5)] == [int, float, int, int, float]


async def test_a_statement_a_migration_outdated_passes_when_tried_again(
    pg_url: str, raw: asyncpg.Connection
) -> None:
    """Another replica's migration changes a table this connection has a prepared statement
    for: inside a unit of work the statement fails as busy (the driver drops it), and the
    unit passes when tried again."""
    read = Read("SELECT * FROM channel_state", (), lambda rows: [dict(r) for r in rows])
    write = Write("UPDATE channel_state SET value = ? WHERE key = 'offset'", [("2",)])
    async with await Store.open_postgres(pg_url, pool_size=1) as store:
        await store.channel_state.set("t.m", "offset", "1")
        assert len((await store.db.commit([write], read))[0]) == 4
        await raw.execute("ALTER TABLE channel_state ADD COLUMN note TEXT")
        with pytest.raises(StorageBusy):
            await store.db.commit([write], read)
        (row,) = await store.db.commit([write], read)
        assert row["note"] is None and row["value"] == "2"
