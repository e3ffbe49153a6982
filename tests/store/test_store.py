"""The SQLite store on a real file: migrations, inbox dedupe, history across restarts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.errors import StorageError
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import InboxStatus, Store
from bot.store.channel_state import ChannelState


async def test_migrations_apply_once_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with await Store.open(path) as store:
        version = await store.db.schema_version()
        assert version >= 1
    async with await Store.open(path) as store:
        assert await store.db.schema_version() == version
        assert await store.db.integrity_check() == "ok"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_inbox_admits_each_message_once(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        args = {"channel": "telegram.main", "message_id": "42", "session_key": "s"}
        assert await store.inbox.admit(envelope_id="e1", **args)
        assert not await store.inbox.admit(envelope_id="e2", **args)
        await store.inbox.mark(channel="telegram.main", message_id="42", status=InboxStatus.DONE)
        entry = await store.inbox.get(channel="telegram.main", message_id="42")
        assert entry is not None
        assert entry.status is InboxStatus.DONE
        assert entry.envelope_id == "e1"


async def test_history_survives_restart_and_new_session(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    call = ToolCallRequest(id="c1", name="calculator", arguments='{"expression": "1+1"}')
    messages = [
        ChatMessage(role="user", content="hi ✨"),
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content="2", tool_call_id="c1", name="calculator"),
        ChatMessage(role="assistant", content="2"),
    ]
    async with await Store.open(path) as store:
        await store.history.append("k", "t1", messages)
    async with await Store.open(path) as store:
        assert await store.history.load("k") == messages
        assert await store.history.load("other") == []
        await store.history.reset("k")
        assert await store.history.load("k") == []
        await store.history.append("k", "t2", [ChatMessage(role="user", content="again")])
        assert [m.content for m in await store.history.load("k")] == ["again"]


async def test_audit_is_append_only(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        await store.db.execute(
            "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary,"
            " fingerprint, decision, decided_by) VALUES (1, 'c', 'c', 'u', 't', '', 'f', 'd', 'r')"
        )
        with pytest.raises(sqlite3.IntegrityError):
            await store.db.execute("DELETE FROM audit")


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


async def test_channel_state_rows_age_and_card_rows_are_pruned(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
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


async def test_rows_from_before_the_age_column_are_kept_until_pruned(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with await Store.open(path) as store:
        await store.channel_state.set("telegram.main", "offset", "7")
    with sqlite3.connect(path) as conn:  # as a database written before migration 0003
        conn.execute("UPDATE channel_state SET updated_at = 0")
    async with await Store.open(path) as store:
        assert await store.channel_state.get("telegram.main", "offset") == "7"
        assert await store.channel_state.prune("offset", older_than_s=60) == 1
