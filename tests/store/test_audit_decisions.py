"""Audit decisions: one spelling each (both engines), and old rows of a SQLite file migrated
to it (PostgreSQL's migration of the same number: tests/store/postgres/test_migrations.py)."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from bot.approval.audit import to_jsonl
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from bot.store.audit import AuditEntry, Decision

#: What version 6 stored in the ``decision`` column, and what each reads as now.
OLD_SPELLINGS = {
    "allow": Decision.POLICY_ALLOWED,
    "deny": Decision.POLICY_DENIED,
    "approved": Decision.APPROVED,
    "always": Decision.ALWAYS,
    "denied": Decision.DENIED,
    "edited": Decision.EDITED,
    "auto_denied": Decision.AUTO_DENIED,
    "expired": Decision.EXPIRED,
    "click_refused:approve": Decision.CLICK_REFUSED_APPROVE,
    "click_refused:deny": Decision.CLICK_REFUSED_DENY,
    "click_refused:always": Decision.CLICK_REFUSED_ALWAYS,
}
AUDIT_COLUMNS = (
    "id, at, channel, conversation_id, requester, tool, summary, fingerprint, decision,"
    " decided_by, reason, latency_ms"
)


def schema_version_6(path: Path) -> None:
    """A database as version 6 of hatchway left it: migrations 0001-0006, nothing after."""
    folder = resources.files("bot.store.sqlite") / "migrations"
    scripts = sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql") and int(entry.name[:4]) <= 6
    )
    assert [name[:4] for name, _ in scripts] == ["0001", "0002", "0003", "0004", "0005", "0006"]
    with sqlite3.connect(path) as conn:
        for _name, sql in scripts:
            conn.executescript(sql)
        conn.execute("PRAGMA user_version = 6")


#: An old row's decision and the reason it was stored with.
OLD_ROWS = (
    ("allow", "policy: auto_approve"),
    ("deny", "policy: deny list"),
    ("approved", "click"),
    ("always", "terminal"),
    ("denied", "cli"),
    ("edited", "click"),
    ("auto_denied", "no approver reachable"),
    ("expired", "timeout"),
    ("click_refused:approve", "not_authorised"),
    ("click_refused:deny", "self_approval"),
    ("click_refused:always", "not_authorised"),
)


def old_rows(path: Path) -> list[tuple[object, ...]]:
    """One audit row per old spelling (:data:`OLD_ROWS`), and two approvals rows (a click's
    and a timeout's); returns the audit rows as inserted."""
    rows: list[tuple[object, ...]] = [
        (
            i,
            1000.0 + i,
            "slack.team",
            "C1",
            "U_ALICE",
            "shell",
            '["ls"]',
            "f" * 64,
            decision,
            "U_BOB",
            reason,
            float(i),
        )
        for i, (decision, reason) in enumerate(OLD_ROWS, start=1)
    ]
    with sqlite3.connect(path) as conn:
        conn.executemany(f"INSERT INTO audit ({AUDIT_COLUMNS}) VALUES ({'?, ' * 11}?)", rows)
        conn.executemany(
            "INSERT INTO approvals (id, channel, conversation_id, session_key, requester, tool,"
            " fingerprint, summary, status, decided_by, reason, created_at, expires_at)"
            " VALUES (?, 'slack.team', 'C1', 's', 'U_ALICE', 'shell', ?, '[]', ?, ?, ?, 1, 2)",
            [
                ("apr-1", "f" * 64, "approved", "U_BOB", "click"),
                ("apr-2", "f" * 64, "expired", "runtime", "timeout"),
            ],
        )
    return rows


def read(path: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


async def test_migration_respells_old_audit_rows_and_keeps_them_append_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hatchway.db"
    schema_version_6(path)
    before = old_rows(path)

    async with await Store.open(path) as store:  # applies 0007 and any later migration
        assert await store.db.schema_version() >= 7
        entries = await store.audit.since()
        approvals = await store.approvals.list()

    assert [d for d, _ in OLD_ROWS] == list(OLD_SPELLINGS)
    assert [e.decision for e in entries] == list(OLD_SPELLINGS.values())
    assert all(type(e.decision) is Decision for e in entries)
    # nothing but the two policy spellings changed, every other column of every row is kept
    after = read(path, f"SELECT {AUDIT_COLUMNS} FROM audit ORDER BY id")
    assert [row[:8] + row[9:] for row in after] == [row[:8] + row[9:] for row in before]
    assert [row[8] for row in after] == [d.value for d in OLD_SPELLINGS.values()]
    assert [(a.status, a.reason) for a in approvals] == [
        (ApprovalStatus.APPROVED, "click"),
        (ApprovalStatus.EXPIRED, "timeout"),
    ]
    # the export shows the one spelling
    exported = to_jsonl(entries)
    assert '"decision": "policy_allowed"' in exported and '"decision": "allow"' not in exported

    # the trigger lifted for the migration is back: rows still refuse updates and deletes
    with sqlite3.connect(path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET decision = 'allow' WHERE id = 1")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM audit")
    triggers = read(path, "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
    assert ("audit_no_update",) in triggers and ("audit_no_delete",) in triggers


async def test_migration_runs_once(tmp_path: Path) -> None:
    path = tmp_path / "hatchway.db"
    schema_version_6(path)
    old_rows(path)
    async with await Store.open(path) as store:
        first = await store.audit.since()
    async with await Store.open(path) as store:
        assert await store.audit.since() == first


@pytest.mark.parametrize("decision", list(Decision), ids=str)
async def test_every_decision_is_stored_as_its_one_spelling(
    store: Store, decision: Decision
) -> None:
    await store.audit.append(
        AuditEntry(
            at=1.0,
            channel="slack.team",
            conversation_id="C1",
            requester="U_ALICE",
            tool="shell",
            summary="[]",
            fingerprint="f",
            decision=decision,
            decided_by="runtime",
        )
    )
    (entry,) = await store.audit.since()
    assert entry.decision is decision
    assert [r[0] for r in await store.db.fetchall("SELECT decision FROM audit")] == [decision.value]
