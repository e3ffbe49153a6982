"""The store on both engines (a real SQLite file, a real PostgreSQL database): migrations,
inbox dedupe, history across restarts, the audit trigger, one-statement decisions."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bot.errors import StorageError, StorageIntegrityError
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import InboxKey, InboxStatus, Store
from bot.store.channel_state import ChannelState
from bot.store.grants import NewGrant
from bot.store.pairings import PairingRecord
from tests.store.conftest import StorePlace


@pytest.mark.fresh_sqlite
async def test_migrations_apply_once(place: StorePlace) -> None:
    async with await place.open() as store:
        version = await store.schema_version()
        assert version >= 13
    async with await place.open() as store:
        assert await store.schema_version() == version
        assert await store.integrity_check() == "ok"
        await store.check_writable()


@pytest.mark.fresh_sqlite
async def test_a_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with await Store.open(path):
        pass
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_inbox_admits_each_message_once(store: Store) -> None:
    key = InboxKey(channel="telegram.main", message_id="42")
    assert await store.inbox.admit(key, envelope_id="e1", session_key="s", payload="{}")
    assert not await store.inbox.admit(key, envelope_id="e2", session_key="s")
    assert [e.key for e in await store.inbox.unfinished()] == [key]
    await store.inbox.mark(key, InboxStatus.FAILED, error="boom")
    entry = await store.inbox.get(key)
    assert entry is not None
    assert (entry.key, entry.status, entry.error) == (key, InboxStatus.FAILED, "boom")
    assert (entry.envelope_id, entry.session_key, entry.payload) == ("e1", "s", "{}")
    assert await store.inbox.unfinished() == []
    assert await store.inbox.get(InboxKey(channel="telegram.other", message_id="42")) is None
    assert await store.inbox.counts() == {"failed": 1}


async def test_history_survives_restart_and_new_session(place: StorePlace) -> None:
    call = ToolCallRequest(id="c1", name="calculator", arguments='{"expression": "1+1"}')
    messages = [
        ChatMessage(role="user", content="hi ✨"),
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content="2", tool_call_id="c1", name="calculator"),
        ChatMessage(role="assistant", content="2"),
    ]
    async with await place.open() as store:
        await store.history.append("k", "t1", messages)
    async with await place.open() as store:
        assert await store.history.load("k") == messages
        assert await store.history.load("other") == []
        await store.history.reset("k")
        assert await store.history.load("k") == []
        await store.history.append("k", "t2", [ChatMessage(role="user", content="again")])
        assert [m.content for m in await store.history.load("k")] == ["again"]


async def test_audit_is_append_only(store: Store) -> None:
    await store.db.execute(
        "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary,"
        " fingerprint, decision, decided_by) VALUES (?, 'c', 'c', 'u', 't', '', 'f', 'd', 'r')",
        (time.time(),),
    )
    with pytest.raises(StorageIntegrityError, match="audit rows are append-only"):
        await store.db.execute("DELETE FROM audit")
    with pytest.raises(StorageIntegrityError, match="audit rows are append-only"):
        await store.db.execute("UPDATE audit SET summary = 'edited'")


async def test_unopenable_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="cannot open database"):
        await Store.open(blocker / "h.db")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_channel_state_rows_age_and_card_rows_are_pruned(store: Store) -> None:
    clock = Clock(1_000_000.0)
    state = ChannelState(store.db, clock)
    await state.set("telegram.main", "card:1:10", "old card")
    await state.set("telegram.main", "offset", "41")  # not a card: never pruned
    await state.set("slack.main", "cardigan", "no colon: another prefix")
    await state.set("slack.main", "card_x", "an underscore is not a wildcard")
    await state.set("discord.main", "card:99", "old card")
    clock.now += 10_000
    await state.set("slack.main", "card:C1:1.1", "recent card")
    await state.set("telegram.main", "card:1:10", "rewritten: recent again")
    clock.now += 100
    assert await state.prune("card:", older_than_s=5000) == 1  # discord's card:99
    assert await state.get("discord.main", "card:99") is None
    assert await state.get("telegram.main", "card:1:10") == "rewritten: recent again"
    assert await state.prune("card:", older_than_s=0) == 2
    assert await state.get("telegram.main", "offset") == "41"
    assert await state.get("slack.main", "cardigan") is not None
    assert await state.get("slack.main", "card_x") is not None
    await state.delete("telegram.main", "offset")
    assert await state.get("telegram.main", "offset") is None


async def test_rows_from_before_the_age_column_are_kept_until_pruned(place: StorePlace) -> None:
    async with await place.open() as store:
        await store.channel_state.set("telegram.main", "offset", "7")
        # as a database written before migration 0003
        await store.db.execute("UPDATE channel_state SET updated_at = 0")
    async with await place.open() as store:
        assert await store.channel_state.get("telegram.main", "offset") == "7"
        assert await store.channel_state.prune("offset", older_than_s=60) == 1


async def test_one_statement_decisions_win_once(store: Store) -> None:
    """Approving a pairing, revoking a grant and deleting a note are each one conditional
    statement: the first call wins, a second finds nothing to do."""
    for code, expires_at in (("live", 200.0), ("stale", 50.0)):
        await store.pairings.create(
            PairingRecord(
                code=code,
                channel="telegram.main",
                user_id="u1",
                display_name="U",
                status="pending",
                created_at=0.0,
                expires_at=expires_at,
            )
        )
    approved = await store.pairings.approve("live", "admin", 100.0)
    assert approved is not None
    assert (approved.status, approved.approved_by, approved.approved_at) == (
        "approved",
        "admin",
        100.0,
    )
    assert await store.pairings.approve("live", "admin", 101.0) is None
    assert await store.pairings.approve("stale", "admin", 100.0) is None  # expired
    assert await store.pairings.is_paired("telegram.main", "u1")

    grant = NewGrant(tool="shell", scope="global", scope_key="", granted_by="admin", created_at=1.0)
    first, second = await store.grants.create(grant), await store.grants.create(grant)
    assert second == first + 1
    assert await store.grants.revoke(first, 2.0)
    assert not await store.grants.revoke(first, 3.0)
    assert not await store.grants.revoke(999, 3.0)
    found = await store.grants.find_active("shell", [("global", "")], 4.0)
    assert found is not None and found.id == second

    note = await store.memory.add(scope_key="a", content="the answer is 42")
    assert not await store.memory.delete(scope_key="b", note_id=note)  # another scope
    assert [n.id for n in await store.memory.search(scope_key="a", query="answer")] == [note]
    assert await store.memory.delete(scope_key="a", note_id=note)
    assert not await store.memory.delete(scope_key="a", note_id=note)
    assert await store.memory.search(scope_key="a", query="answer") == []


async def test_a_channel_state_key_is_claimed_once_across_processes(
    two: tuple[Store, Store],
) -> None:
    first, second = two
    claims = [
        first.channel_state.claim("telegram.main", "tg-sending:5", "a"),
        second.channel_state.claim("telegram.main", "tg-sending:5", "b"),
    ]
    won = [await claim for claim in claims]

    assert sorted(won) == [False, True]
    held = await second.channel_state.get("telegram.main", "tg-sending:5")
    assert held == ("a" if won[0] else "b")
    assert await first.channel_state.claim("telegram.main", "tg-sending:6", "c")


async def test_channel_state_rows_are_set_and_deleted_in_one_write(store: Store) -> None:
    state = store.channel_state
    await state.set("telegram.main", "tg-sending:5", "pending")

    await state.write(
        "telegram.main", put={"tg-last:5": "501", "tg-reply:k:1": "501"}, delete=["tg-sending:5"]
    )

    assert await state.get("telegram.main", "tg-sending:5") is None
    assert await state.items("telegram.main", "tg-") == [
        ("tg-last:5", "501"),
        ("tg-reply:k:1", "501"),
    ]
    assert await state.claim("telegram.main", "tg-sending:5", "next")
