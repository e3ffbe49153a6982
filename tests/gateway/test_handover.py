"""A conversation's turns across replicas: Apps over one real PostgreSQL database, each with
its own state directory and its own connection to the platform (the in-process channel).

One replica owns a session and runs its turns in inbox order, whichever replica a message
reached; a redelivery on another connection is answered once; a replica's start recovers
nothing of a live one's; when the owner dies another takes the session over, settles what
was cut off and answers what was queued, in order. Every wait is for a condition with a
generous timeout; what is asserted is who answered what, in which order, never how fast."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bot.envelope import envelope_to_json
from bot.gateway.recovery import INTERRUPTED, SHUTDOWN_MESSAGE
from bot.store import InboxKey, InboxStatus, Store
from tests.fakes.replica_apps import SLACK, Replica, Replicas, message

WAIT_S = 60.0
SESSION = f"{SLACK}:C1"


@pytest.fixture
async def replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    started = Replicas(pg_url, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


def answers(replica: Replica) -> list[str]:
    """What the replica sent to the conversation, progress aside."""
    return [t for t in replica.channel.texts if t.startswith(("answer", "⏹"))]


async def reached(replica: Replica, tag: str) -> None:
    """Wait until the replica's model was asked about ``tag``."""
    async with asyncio.timeout(WAIT_S):
        await replica.model.reached.setdefault(tag, asyncio.Event()).wait()
    replica.model.reached[tag].clear()


async def took(tag: str, *pair: Replica) -> tuple[Replica, Replica]:
    """The replica whose model was asked about ``tag`` (the owner of its session), and the
    other. The replica a conversation's first message reaches usually takes its session,
    but the other's sweep (every second) may take it first: between the admission's inbox
    write and its take of the session, the sweep sees a waiting entry of a session nobody
    owns (what a replica that died there would leave), takes it and runs the turn; the
    admitting replica then hands the message over. Either way it is answered once."""
    async with asyncio.timeout(WAIT_S):
        while True:
            for replica in pair:
                event = replica.model.reached.get(tag)
                if event is not None and event.is_set():
                    event.clear()
                    other = next(r for r in pair if r is not replica)
                    return replica, other
            await asyncio.sleep(0.02)


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait until ``check()`` holds (the store moves on its own)."""
    async with asyncio.timeout(WAIT_S):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def settled(store: Store, *ids: str) -> None:
    """Wait until the entries ``ids`` are done or failed (marked just after the reply)."""

    async def check() -> bool:
        final = (InboxStatus.DONE, InboxStatus.FAILED)
        return all(s in final for s in await statuses(store, *ids))

    await until(check)


async def statuses(store: Store, *ids: str) -> list[InboxStatus | None]:
    found = []
    for message_id in ids:
        entry = await store.inbox.get(InboxKey(channel=str(SLACK), message_id=message_id))
        found.append(None if entry is None else entry.status)
    return found


async def test_messages_of_one_conversation_on_two_replicas_are_answered_once_in_order(
    replicas: Replicas,
) -> None:
    first = asyncio.Event()
    a = await replicas.start("a", holds={"m1": first})
    b = await replicas.start("b", holds={"m1": first})

    await a.deliver(message("m1 first", "1"))  # a takes the session (or b's sweep: took)
    owner, other = await took("m1", a, b)
    await other.deliver(message("m2 second", "2"))  # handed over to the owner, behind m1
    await other.deliver(message("m3 third", "3"))
    await owner.deliver(message("m2 second", "2"))  # the same event on its connection too
    await other.deliver(message("m1 first", "1"))
    first.set()
    await owner.channel.wait_for("answer m3", within_s=WAIT_S)

    assert answers(owner) == ["answer m1", "answer m2", "answer m3"]
    assert other.channel.sent == []
    assert replicas.log == [(owner.name, "m1"), (owner.name, "m2"), (owner.name, "m3")]
    store = owner.app.store
    await settled(store, "1", "2", "3")
    assert await statuses(store, "1", "2", "3") == [InboxStatus.DONE] * 3
    assert await store.session_owners.owner(SESSION) == owner.app.keeper.replica_id  # type: ignore[union-attr]
    # the second turn saw the first one's answer: one history, in order
    history = await store.history.load(SESSION)
    said = [m.content for m in history if m.role == "assistant"]
    assert said == ["answer m1", "answer m2", "answer m3"]


async def test_a_conversation_first_reached_on_another_replica_is_owned_there(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await b.deliver(message("m1 hello", "1", conversation="C7"))  # b takes it (or a's sweep)
    owner, other = await took("m1", b, a)
    await owner.channel.wait_for("answer m1", within_s=WAIT_S)
    await other.deliver(message("m2 again", "2", conversation="C7"))
    await owner.channel.wait_for("answer m2", within_s=WAIT_S)
    assert other.channel.sent == []
    assert replicas.log == [(owner.name, "m1"), (owner.name, "m2")]


async def test_an_edit_or_a_deletion_reaching_another_replica_applies_to_the_queued_turn(
    replicas: Replicas,
) -> None:
    first = asyncio.Event()
    a = await replicas.start("a", holds={"m1": first})
    b = await replicas.start("b", holds={"m1": first})
    await a.deliver(message("m1 first", "1"))
    owner, other = await took("m1", a, b)
    await other.deliver(message("m2 draft", "2"))  # queued on the owner, behind m1
    await other.deliver(message("m3 unwanted", "3"))
    store = other.app.store

    async def queued_on_owner() -> bool:
        rows = await store.session_owners.unsettled(SESSION)
        return len([r for r in rows if r.replica_id is not None]) == 3

    await until(queued_on_owner)
    # the platform reports the edit and the deletion on the other replica's connection
    await other.app.gateway.edited(message("m4 edited instead", "2"))
    await other.app.gateway.deleted(SLACK, "3")
    first.set()
    await owner.channel.wait_for("answer m4", within_s=WAIT_S)
    await settled(store, "1", "2", "3")
    assert replicas.log == [(owner.name, "m1"), (owner.name, "m4")]
    assert answers(owner) == ["answer m1", "answer m4"]
    assert other.channel.sent == []
    assert await statuses(store, "1", "2", "3") == [
        InboxStatus.DONE,
        InboxStatus.DONE,
        InboxStatus.FAILED,
    ]


async def test_a_stop_reaching_another_replica_stops_the_turn_where_it_runs(
    replicas: Replicas,
) -> None:
    never = asyncio.Event()
    # m4 is held too: the slash command below must find it running
    a = await replicas.start("a", holds={"m1": never, "m4": never})
    b = await replicas.start("b", holds={"m1": never, "m4": never})
    await a.deliver(message("m1 first", "1"))
    a, b = await took("m1", a, b)  # a: the owner, whichever replica took the session
    await a.deliver(message("m2 second", "2"))  # queued behind m1
    await b.deliver(message("/stop", "3"))  # nothing runs on b: its owner stops it
    await a.channel.wait_for("Stopped", within_s=WAIT_S)
    await settled(a.app.store, "1", "2")
    # the stopped turn answered that it stopped; the one queued behind it was dropped
    assert await statuses(a.app.store, "1", "2") == [InboxStatus.DONE, InboxStatus.FAILED]
    assert b.channel.sent == []
    assert replicas.log == [(a.name, "m1")]

    # a slash command names no thread: it stops what the sender started in the conversation
    await a.deliver(message("m4 again", "4"))
    await reached(a, "m4")
    await b.deliver(replace(message("/stop", "5"), command_scope="conversation"))
    await a.channel.wait_for("Stopped 1 turn", within_s=WAIT_S)
    assert b.channel.sent == []
    await settled(a.app.store, "4")
    # nothing of the sender's runs anywhere now: told so once (by the session's owner)
    await b.deliver(replace(message("/stop", "6"), command_scope="conversation"))
    await a.channel.wait_for("Nothing you started", within_s=WAIT_S)
    assert b.channel.sent == []


async def test_a_start_recovers_nothing_of_a_live_replicas_turns(replicas: Replicas) -> None:
    first = asyncio.Event()
    a = await replicas.start("a", holds={"m1": first})
    await a.deliver(message("m1 first", "1"))
    await reached(a, "m1")
    await a.deliver(message("m2 second", "2"))  # queued behind m1 on a

    b = await replicas.start("b")  # its start-up recovery has run
    assert await statuses(b.app.store, "1", "2") == [
        InboxStatus.PROCESSING,
        InboxStatus.RECEIVED,
    ]
    first.set()
    await a.channel.wait_for("answer m2", within_s=WAIT_S)
    assert answers(a) == ["answer m1", "answer m2"]
    assert b.channel.sent == []
    assert replicas.log == [("a", "m1"), ("a", "m2")]


async def test_when_the_owner_dies_another_replica_settles_its_turn_and_runs_the_queue(
    replicas: Replicas,
) -> None:
    never = asyncio.Event()
    a = await replicas.start("a", holds={"m1": never})
    b = await replicas.start("b", holds={"m1": never})
    await a.deliver(message("m1 first", "1"))
    a, b = await took("m1", a, b)  # a: the owner, whichever replica took the session
    await b.deliver(message("m2 second", "2"))  # handed over: a claims it behind m1
    await b.deliver(message("m3 third", "3"))
    store = b.app.store
    dead = a.app.keeper.replica_id  # type: ignore[union-attr]

    async def claimed_by_a() -> bool:
        rows = await store.session_owners.unsettled(SESSION)
        return [(r.key.message_id, r.replica_id) for r in rows] == [
            ("1", dead),
            ("2", dead),
            ("3", dead),
        ]

    await until(claimed_by_a)
    await replicas.crash(a)

    await b.channel.wait_for("answer m3", within_s=WAIT_S)
    # the cut-off turn told to ask again first, then the queue in order, each once
    assert answers(b) == [SHUTDOWN_MESSAGE, "answer m2", "answer m3"]
    assert replicas.log == [(a.name, "m1"), (b.name, "m2"), (b.name, "m3")]
    await settled(store, "1", "2", "3")
    assert await statuses(store, "1", "2", "3") == [
        InboxStatus.FAILED,
        InboxStatus.DONE,
        InboxStatus.DONE,
    ]
    entry = await store.inbox.get(InboxKey(channel=str(SLACK), message_id="1"))
    assert entry is not None and entry.error == INTERRUPTED
    assert await store.session_owners.owner(SESSION) == b.app.keeper.replica_id  # type: ignore[union-attr]

    # the session stays with b: the next message is answered there
    await b.deliver(message("m4 later", "4"))
    await b.channel.wait_for("answer m4", within_s=WAIT_S)
    assert replicas.log[-1] == (b.name, "m4")


async def test_a_message_reaching_a_stopping_replica_is_admitted_and_answered_next_in_order(
    replicas: Replicas,
) -> None:
    first = asyncio.Event()
    a = await replicas.start("a", holds={"m1": first})
    b = await replicas.start("b", holds={"m1": first})
    await a.deliver(message("m1 first", "1"))
    a, b = await took("m1", a, b)  # a: the owner, whichever replica took the session
    # a drains, and m1 finishes in the drain however long the steps below take (a busy
    # machine took more than the default five seconds: m1 was cut off and told to ask again)
    stopping = asyncio.create_task(replicas.stop(a, drain_timeout_s=WAIT_S))
    async with asyncio.timeout(WAIT_S):
        while not a.app.gateway.draining:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    await a.deliver(message("m2 second", "2"))  # taken in, not refused: no redelivery wait
    await b.deliver(message("m3 third", "3"))
    first.set()
    await stopping
    await b.channel.wait_for("answer m3", within_s=WAIT_S)
    await settled(b.app.store, "1", "2", "3")
    assert answers(a) + answers(b) == ["answer m1", "answer m2", "answer m3"]
    assert [tag for _, tag in replicas.log] == ["m1", "m2", "m3"]
    assert await statuses(b.app.store, "1", "2", "3") == [InboxStatus.DONE] * 3


async def test_a_message_a_dead_replica_admitted_but_never_handed_over_is_answered(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    # a admits a message of a session nobody owns, then dies before anything else:
    # as if killed between the inbox write and taking the session
    await a.app.store.inbox.admit(
        InboxKey(channel=str(SLACK), message_id="9"),
        envelope_id="env-9",
        session_key=f"{SLACK}:C9",
        payload=envelope_to_json(message("m9 orphan", "9", conversation="C9")),
        sender_id="U_ALICE",
    )
    await replicas.crash(a)
    await b.channel.wait_for("answer m9", within_s=WAIT_S)
    assert replicas.log == [("b", "m9")]
    await settled(b.app.store, "9")
    assert await statuses(b.app.store, "9") == [InboxStatus.DONE]
