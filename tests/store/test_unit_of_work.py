"""A unit of work: what a turn step records, committed together in one trip or not at all."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.errors import StorageIntegrityError
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.store import InboxKey, InboxStatus, Store, ToolCallRecord, UnitOfWork
from tests.store.conftest import StorePlace

KEY = InboxKey(channel="console.main", message_id="m1")
SESSION = "console.main:c1"


def record(call_id: str) -> ToolCallRecord:
    return ToolCallRecord(
        turn_id="t1",
        call_id=call_id,
        session_key=SESSION,
        channel="console.main",
        tool="noop",
        arguments="{}",
        status="executed",
        synthetic=False,
        observation="ok",
        duration_ms=1.0,
    )


@pytest.fixture
async def store(place: StorePlace) -> AsyncIterator[Store]:
    async with await place.open() as store:
        await store.inbox.admit(KEY, envelope_id="e1", session_key=SESSION)
        await store.history.append(SESSION, "t0", [ChatMessage(role="user", content="earlier")])
        yield store


async def status(store: Store) -> InboxStatus:
    entry = await store.inbox.get(KEY)
    assert entry is not None
    return entry.status


async def test_a_turn_start_and_its_history_are_one_trip(store: Store) -> None:
    user = ChatMessage(role="user", content="hi")
    work = UnitOfWork().mark_inbox(KEY, InboxStatus.PROCESSING)
    work.append_history(SESSION, "t1", [user])
    trips = store.db.trips
    history = await store.commit(work, then=store.history.loading(SESSION))
    assert store.db.trips - trips == 1
    assert [m.content for m in history] == ["earlier", "hi"]
    assert await status(store) is InboxStatus.PROCESSING


async def test_a_batch_and_its_messages_commit_together(store: Store) -> None:
    call = ToolCallRequest(id="c1", name="noop", arguments="{}")
    messages = [
        ChatMessage(role="assistant", tool_calls=(call,)),
        ChatMessage(role="tool", content="ok", tool_call_id="c1", name="noop"),
    ]
    work = UnitOfWork().record_tool_calls([record("c1"), record("c2")])
    work.append_history(SESSION, "t1", messages)
    trips = store.db.trips
    await store.commit(work)
    assert store.db.trips - trips == 1
    assert [r.call_id for r in await store.tool_calls.for_turn("t1")] == ["c1", "c2"]
    assert (await store.history.load(SESSION))[1:] == messages


REFUSE_MESSAGES = {
    "sqlite": (
        "CREATE TRIGGER no_messages BEFORE INSERT ON messages"
        " BEGIN SELECT RAISE(ABORT, 'no room for messages'); END",
    ),
    "postgres": (
        "CREATE FUNCTION no_messages() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        " RAISE EXCEPTION 'no room for messages' USING ERRCODE = 'check_violation'; END $$",
        "CREATE TRIGGER no_messages BEFORE INSERT ON messages"
        " FOR EACH ROW EXECUTE FUNCTION no_messages()",
    ),
}


async def test_a_failing_record_leaves_nothing_of_the_unit(store: Store, place: StorePlace) -> None:
    for sql in REFUSE_MESSAGES[place.engine]:  # the last write of the unit fails
        await store.db.execute(sql)
    work = UnitOfWork().mark_inbox(KEY, InboxStatus.PROCESSING).record_tool_calls([record("c1")])
    work.append_history(SESSION, "t1", [ChatMessage(role="user", content="hi")])
    with pytest.raises(StorageIntegrityError, match="no room for messages"):
        await store.commit(work)
    assert await status(store) is InboxStatus.RECEIVED
    assert await store.tool_calls.for_turn("t1") == []
    assert [m.content for m in await store.history.load(SESSION)] == ["earlier"]


async def test_an_empty_unit_costs_no_trip(store: Store) -> None:
    work = UnitOfWork().record_tool_calls([]).append_history(SESSION, "t1", [])
    assert work.writes == ()
    trips = store.db.trips
    await store.commit(work)
    assert store.db.trips == trips
