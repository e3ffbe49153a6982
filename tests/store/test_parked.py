"""Parked turns (bot.store.parked), on both engines: the record round-trips, parking moves
the row and the inbox entry together, a claim wins once, the resumable rows are those whose
card is no longer pending, an unreadable body is an error of that row alone, and forgetting
and retention cover the table."""

from __future__ import annotations

import asyncio

import pytest

from bot.envelope import envelope_to_json
from bot.providers.base import ToolCallRequest
from bot.store import InboxKey, InboxStatus, Store, UnitOfWork
from bot.store.forget import FORGOTTEN_WHILE_PARKED
from bot.store.parked import (
    MAX_BODY_CHARS,
    VERSION,
    ParkRecord,
    ParkState,
    UnreadableParkRecord,
)
from tests.store.records import approval_row, envelope, session_of


def _record(
    approval_id: str = "ap1", *, user: str = "ann", arguments: str = '{"x": 1}'
) -> ParkRecord:
    env = envelope(user, "c1", f"m-{approval_id}")
    return ParkRecord(
        approval_id=approval_id,
        turn_id=f"t-{approval_id}",
        session_key=session_of(env),
        envelope=env,
        text="let me deploy",
        calls=(
            ToolCallRequest(id="call-a", name="calculator", arguments="{}"),
            ToolCallRequest(id="call-b", name="deploy", arguments=arguments),
        ),
        waiting=1,
        since=100.0,
        asked={1: approval_id},
    )


async def _admitted(store: Store, record: ParkRecord) -> None:
    await store.inbox.admit(
        record.inbox,
        envelope_id=record.envelope.envelope_id,
        session_key=record.session_key,
        payload=envelope_to_json(record.envelope),
        sender_id=record.envelope.sender.id,
    )
    await store.commit(UnitOfWork().start_inbox(record.inbox, record.turn_id))


async def test_a_record_round_trips_and_parks_with_its_inbox_entry(store: Store) -> None:
    record = _record()
    await _admitted(store, record)
    assert await store.parked.hold(record)
    read = await store.parked.get("ap1")
    assert read is not None
    assert read.state is ParkState.WAITING
    assert (read.calls, read.asked, read.waiting, read.text) == (
        record.calls,
        record.asked,
        1,
        "let me deploy",
    )
    assert read.envelope == record.envelope
    await store.commit(UnitOfWork().park("ap1", record.inbox, at=200.0, owner=None))
    parked = await store.parked.get("ap1")
    assert parked is not None and parked.state is ParkState.PARKED and parked.parked_at == 200.0
    entry = await store.inbox.get(record.inbox)
    assert entry is not None and entry.status is InboxStatus.PARKED
    # start-up recovery reads only received and processing entries
    assert record.inbox not in {e.key for e in await store.inbox.unfinished()}


async def test_a_claim_wins_once_even_when_raced(store: Store) -> None:
    record = _record()
    await _admitted(store, record)
    await store.parked.hold(record)
    # a waiting row is not resumable: its turn is still in its process
    assert not await store.parked.claim("ap1", "r1")
    await store.commit(UnitOfWork().park("ap1", record.inbox, at=1.0, owner=None))
    won = await asyncio.gather(*(store.parked.claim("ap1", f"r{i}") for i in range(5)))
    assert sorted(won) == [False, False, False, False, True]
    row = await store.parked.row("ap1")
    assert row is not None and row.state is ParkState.RESUMING
    # parking again after a claim changes nothing
    await store.commit(UnitOfWork().park("ap1", record.inbox, at=2.0, owner=None))
    row = await store.parked.row("ap1")
    assert row is not None and row.state is ParkState.RESUMING


async def test_resumable_rows_are_parked_ones_whose_card_is_not_pending(store: Store) -> None:
    for approval_id, status in (("open", "pending"), ("yes", "approved"), ("late", "expired")):
        record = _record(approval_id)
        await _admitted(store, record)
        await approval_row(store, approval_id, requester="ann", conversation="c1", status=status)
        await store.parked.hold(record)
        await store.commit(UnitOfWork().park(approval_id, record.inbox, at=1.0, owner=None))
    gone = _record("gone")  # its card was pruned: resumed too, to be finished
    await _admitted(store, gone)
    await store.parked.hold(gone)
    await store.commit(UnitOfWork().park("gone", gone.inbox, at=1.0, owner=None))
    assert {r.approval_id for r in await store.parked.decided()} == {"yes", "late", "gone"}
    assert {r.approval_id for r in await store.parked.session_calls(gone.session_key)} == {
        "open",
        "yes",
        "late",
        "gone",
    }
    await store.parked.drop("yes")
    assert await store.parked.get("yes") is None


async def test_an_unreadable_body_fails_its_row_alone(store: Store) -> None:
    for approval_id in ("bad", "future", "good"):
        record = _record(approval_id)
        await _admitted(store, record)
        await store.parked.hold(record)
    await store.db.execute("UPDATE parked_turns SET body = '{nope' WHERE approval_id = 'bad'")
    await store.db.execute(
        "UPDATE parked_turns SET version = ? WHERE approval_id = 'future'", (VERSION + 1,)
    )
    with pytest.raises(UnreadableParkRecord, match="unreadable"):
        await store.parked.get("bad")
    with pytest.raises(UnreadableParkRecord, match="version"):
        await store.parked.get("future")
    assert await store.parked.get("good") is not None
    # the rows themselves stay readable: a sweep can still finish them
    assert {r.approval_id for r in await store.parked.rows()} == {"bad", "future", "good"}


async def test_a_row_in_a_state_of_a_later_release_is_passed_by(store: Store) -> None:
    """A rolling upgrade gone back leaves a row this release has no name for: the duplicate
    guard, /stop and the sweeps read past it instead of failing for the whole session."""
    for approval_id in ("later", "ours"):
        record = _record(approval_id)
        await _admitted(store, record)
        await store.parked.hold(record)
    await store.db.execute("UPDATE parked_turns SET state = 'frozen' WHERE approval_id = 'later'")
    session = _record("ours").session_key
    assert [r.approval_id for r in await store.parked.session_calls(session)] == ["ours"]
    assert [r.approval_id for r in await store.parked.rows()] == ["ours"]
    assert await store.parked.row("later") is None
    assert await store.parked.row("ours") is not None


async def test_a_batch_too_large_is_not_kept(store: Store) -> None:
    record = _record(arguments='{"x": "' + "a" * MAX_BODY_CHARS + '"}')
    assert not await store.parked.hold(record)
    assert await store.parked.rows() == []


async def test_forgetting_the_requester_removes_the_record_and_finishes_the_entry(
    store: Store,
) -> None:
    ann, bob = _record("ap-ann", user="ann"), _record("ap-bob", user="bob")
    for record in (ann, bob):
        await _admitted(store, record)
        await store.parked.hold(record)
        await store.commit(UnitOfWork().park(record.approval_id, record.inbox, at=1.0, owner=None))
    report = await store.forget.user("ann")
    assert report.removed["parked_turns"] == 1
    assert await store.parked.row("ap-ann") is None
    assert await store.parked.row("ap-bob") is not None
    entry = await store.inbox.get(ann.inbox)
    # failed now, the entry itself went with the rest of the person's finished messages
    assert entry is None or (entry.status, entry.error) == (
        InboxStatus.FAILED,
        FORGOTTEN_WHILE_PARKED,
    )
    report = await store.forget.conversation(str(bob.envelope.channel), "c1")
    assert report.removed["parked_turns"] == 1
    assert await store.parked.rows() == []


async def test_retention_drops_records_whose_card_is_gone(store: Store) -> None:
    kept, orphan = _record("kept"), _record("orphan")
    for record in (kept, orphan):
        await _admitted(store, record)
        await store.parked.hold(record)
    await approval_row(store, "kept", requester="ann", conversation="c1", status="pending")
    await store.retention.prune_tool_calls(cutoff=10**12)
    assert {r.approval_id for r in await store.parked.rows()} == {"kept"}


def test_the_key_names_the_inbox_entry() -> None:
    record = _record()
    assert record.inbox == InboxKey(channel="telegram.main", message_id="m-ap1")
