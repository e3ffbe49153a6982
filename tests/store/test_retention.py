"""Retention, on both engines: deleting by age keeps turns whole and unfinished messages in
place, the audit trail goes only past its recorded cutoff, and the rate-limit buckets outlive
the connection; on SQLite, freed pages go back to the file system (an old file switched
once)."""

from __future__ import annotations

import sqlite3
import time
from importlib import resources
from pathlib import Path

from bot.store import InboxStatus, Store
from bot.store.rate_limits import SavedBucket, Taken
from bot.store.retention import BATCH
from tests.store.conftest import StorePlace
from tests.store.records import audit_row, column, count, envelope, turn

DAY = 86400.0


async def test_pruning_by_age(store: Store) -> None:
    now = time.time()
    old, recent = now - 100 * DAY, now - DAY
    await turn(store, envelope("1", "-100", "1", text="old"), at=old)
    await turn(store, envelope("1", "-100", "2", text="recent"), at=recent)
    await turn(store, envelope("1", "-100", "3", text="waiting"), status=InboxStatus.RECEIVED)
    # an old message still waiting its turn
    await store.db.execute("UPDATE inbox SET updated_at = ? WHERE message_id = '3'", (old,))
    cutoff = now - 30 * DAY

    assert await store.retention.prune_history(cutoff) == 4
    history = await store.history.load("telegram.main:-100")
    assert [m.content for m in history if m.role == "user"] == ["recent"]
    assert await store.retention.prune_tool_calls(cutoff) == (1, 0)
    assert await store.retention.prune_inbox(cutoff) == (1, 1)
    assert await store.retention.prune_usage(cutoff) == (1, 0)
    assert await count(store, "SELECT COUNT(*) FROM usage") == 1
    assert await column(store, "SELECT message_id FROM inbox ORDER BY id") == ["2", "3"]
    assert await count(store, "SELECT COUNT(*) FROM outbox") == 1
    # nothing older left: a second run deletes nothing
    assert await store.retention.prune_history(cutoff) == 0
    assert await store.retention.prune_inbox(cutoff) == (0, 0)


async def test_history_goes_by_whole_turns_in_batches(store: Store) -> None:
    now = time.time()
    for n in range(BATCH // 4 + 3):  # four messages a turn: more than one batch
        await turn(store, envelope("1", "-100", str(n)), at=now - 10 * DAY)
    # one turn's answer came much later
    await store.db.execute("UPDATE messages SET created_at = ? WHERE id = 4", (now,))
    assert await store.retention.prune_history(now - DAY) == 4 * (BATCH // 4 + 3)
    assert await count(store, "SELECT COUNT(*) FROM messages") == 0


async def test_audit_goes_only_past_its_cutoff(store: Store) -> None:
    now = time.time()
    await audit_row(store, requester="1", decided_by="2", at=now - 400 * DAY)
    await audit_row(store, requester="1", decided_by="2", at=now - 100 * DAY)
    assert await store.retention.prune_audit(now - 365 * DAY) == 1
    assert await count(store, "SELECT COUNT(*) FROM audit") == 1
    assert await column(store, "SELECT value FROM retention_marks") == [now - 365 * DAY]


async def test_marks_and_buckets_outlive_the_connection(place: StorePlace) -> None:
    async with await place.open() as store:
        assert await store.retention.last_run() is None
        await store.retention.record_run(1234.5)
        await store.rate_limits.save(
            [
                SavedBucket(bucket="user:telegram.main:1", tokens=0.25, updated_at=10.0),
                SavedBucket(bucket="user:telegram.main:2", tokens=1.0, updated_at=10.0),
            ]
        )
        limit = {"capacity": 3.0, "per_second": 0.1}
        first = await store.rate_limits.merge(
            [
                Taken(bucket="user:telegram.main:1", taken=1),
                Taken(bucket="user:telegram.main:3", taken=2),
            ],
            now=20.0,
            **limit,
        )
        # refilled for 10 s (0.25 + 1.0), one taken; a new bucket starts full, two taken
        assert {(b.bucket, round(b.tokens, 6), b.updated_at) for b in first} == {
            ("user:telegram.main:1", 0.25, 20.0),
            ("user:telegram.main:3", 1.0, 20.0),
        }
        # another replica took one at the same moment: both count, a debt the refill pays
        [second] = await store.rate_limits.merge(
            [Taken(bucket="user:telegram.main:1", taken=1, noticed_at=20.0)], now=20.0, **limit
        )
        assert (round(second.tokens, 6), second.noticed_at) == (-0.75, 20.0)
        # full again (1.0 + 30 s of refill) goes; one still counting down stays
        await store.rate_limits.drop(
            ["user:telegram.main:1", "user:telegram.main:2"],
            now=40.0,
            noticed_before=40.0,
            **limit,
        )
    async with await place.open() as store:
        assert await store.retention.last_run() == 1234.5
        saved = await store.rate_limits.load()
        assert sorted(b.bucket for b in saved) == ["user:telegram.main:1", "user:telegram.main:3"]


def version_10_file(path: Path) -> None:
    """A file as the release before incremental vacuum made it: no auto_vacuum, every
    migration up to 0010 applied, and a large table since deleted."""
    folder = resources.files("bot.store.sqlite") / "migrations"
    scripts = sorted(
        (e.name, e.read_text(encoding="utf-8"))
        for e in folder.iterdir()
        if e.name.endswith(".sql") and int(e.name[:4]) <= 10
    )
    with sqlite3.connect(path) as conn:
        for _name, sql in scripts:
            conn.executescript(sql)
        conn.execute(f"PRAGMA user_version = {int(scripts[-1][0][:4])}")
        conn.executemany(
            "INSERT INTO memory (scope_key, content, created_at) VALUES ('s', ?, 1)",
            [("x" * 2000,) for _ in range(500)],
        )
        conn.commit()
        conn.execute("DELETE FROM memory")
        conn.commit()


async def test_an_old_file_is_switched_once_then_compacted(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    version_10_file(path)
    async with await Store.open(path) as store:
        first = await store.compact()
        assert first.switched
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        with sqlite3.connect(path) as conn:
            conn.executemany(
                "INSERT INTO memory (scope_key, content, created_at) VALUES ('s', ?, 1)",
                [("y" * 2000,) for _ in range(500)],
            )
            conn.commit()
        pages = first.file_pages
        assert await count(store, "SELECT COUNT(*) FROM memory") == 500
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM memory")
            conn.commit()
        second = await store.compact()
        assert not second.switched
        assert second.pages_freed > 200
        assert second.file_pages <= pages + 5


async def test_a_new_file_needs_no_switch(place: StorePlace) -> None:
    async with await place.open() as store:
        assert not (await store.compact()).switched
