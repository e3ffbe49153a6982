"""The gateway on its own: queues, ordering, /stop, the concurrency cap, and recovery."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender, envelope_to_json
from bot.gateway import FAILURE_MESSAGE, SHUTDOWN_MESSAGE, Gateway, SessionControl, TurnReply
from bot.providers.base import ChatMessage
from bot.store import InboxKey, InboxStatus, Store, UnitOfWork
from bot.turn import TurnIdentity
from tests.fakes.channel import FakeChannel

REF = ChannelRef(kind="console", alias="main")


@dataclass(frozen=True, slots=True)
class Allowed:
    allowed: bool = True
    reply: str | None = None
    reason: str = "allowed"


class AllowAll:
    async def check(self, envelope: IngressEnvelope) -> Allowed:
        return Allowed()

    async def is_member(self, envelope: IngressEnvelope) -> bool:
        return True


class Turns:
    """Turn runner whose turns finish when the test releases them."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release: dict[str, asyncio.Event] = {}
        self.cancelled: list[str] = []
        self.running = 0
        self.peak = 0

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        text = turn.envelope.text
        self.started.append(text)
        gate = self.release.setdefault(text, asyncio.Event())
        control.on_cancel(lambda reason: (self.cancelled.append(text), gate.set()))
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await gate.wait()
        finally:
            self.running -= 1
        return TurnReply(text=f"answer to {text}")

    def finish(self, text: str) -> None:
        self.release.setdefault(text, asyncio.Event()).set()


def envelope(
    text: str, *, conversation: str = "c1", message_id: str | None = None
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=REF,
        message_id=message_id or f"{conversation}:{text}",
        conversation_id=conversation,
        sender=Sender(id="u1"),
        text=text,
        reply_target=DeliveryTarget(channel=REF, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


def settings(tmp_path: Path, max_turns: int = 32) -> Settings:
    return parse_settings(
        {"state_dir": str(tmp_path), "agent": {"max_concurrent_turns": max_turns}},
        require_provider=False,
    )


@dataclass
class Rig:
    gateway: Gateway
    turns: Turns
    outbox: FakeChannel
    store: Store
    access: CountingAccess


class CountingAccess(AllowAll):
    """Allows everyone; counts admission attempts (each one checks access first) and runs
    ``on_check`` with the attempt's number."""

    def __init__(self) -> None:
        self.attempts = 0
        self.on_check: Callable[[int], None] = lambda attempt: None

    async def check(self, envelope: IngressEnvelope) -> Allowed:
        self.attempts += 1
        self.on_check(self.attempts)
        return Allowed()


@pytest.fixture
async def rig(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Rig]:
    max_turns = getattr(request, "param", 32)
    store = await Store.open(tmp_path / "h.db")
    turns, outbox, access = Turns(), FakeChannel(REF), CountingAccess()
    gateway = Gateway(
        settings=settings(tmp_path, max_turns),
        store=store,
        access=access,
        run_turn=turns,
        channel_for=lambda ref: outbox,
    )
    task = asyncio.create_task(gateway.run())
    await asyncio.sleep(0)
    try:
        yield Rig(gateway, turns, outbox, store, access)
    finally:
        for event in turns.release.values():
            event.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()


async def until(predicate: Callable[[], bool], within_s: float = 60.0) -> None:
    """Yield to the event loop until ``predicate`` holds, looking after every step of the
    loop (some callers catch a state that lasts one step); ``within_s`` bounds a failure
    only: a loaded machine took over 10 s."""
    async with asyncio.timeout(within_s):
        for _ in itertools.count():
            if predicate():
                return
            await asyncio.sleep(0)


async def test_one_turn_at_a_time_per_session_in_order(rig: Rig) -> None:
    for text in ("a", "b", "c"):
        await rig.gateway.deliver(envelope(text))
    await until(lambda: rig.turns.started == ["a"])
    rig.turns.finish("a")
    await until(lambda: rig.turns.started == ["a", "b"])
    rig.turns.finish("b")
    rig.turns.finish("c")
    await until(lambda: len(rig.outbox.texts) == 3)
    assert rig.outbox.texts == ["answer to a", "answer to b", "answer to c"]
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="c1:c"))
    assert entry is not None and entry.status is InboxStatus.DONE


@pytest.mark.parametrize("rig", [2], indirect=True)
async def test_global_cap_on_concurrent_turns(rig: Rig) -> None:
    for n in range(5):
        await rig.gateway.deliver(envelope("x", conversation=f"c{n}"))
    await until(lambda: len(rig.turns.started) == 2)
    for _ in range(20):
        await asyncio.sleep(0)
    assert rig.turns.running == 2
    rig.turns.finish("x")
    await until(lambda: len(rig.outbox.texts) == 5)
    assert rig.turns.peak == 2


async def test_stop_cancels_the_running_turn_and_drops_the_queue(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("long"))
    await rig.gateway.deliver(envelope("queued"))
    await until(lambda: rig.turns.started == ["long"])
    await rig.gateway.deliver(envelope("/stop"))
    await until(lambda: rig.turns.cancelled == ["long"])
    await until(lambda: rig.gateway.active_turns == 0)
    assert rig.turns.started == ["long"]
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="c1:queued"))
    assert entry is not None and entry.status is InboxStatus.FAILED


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\u3000"])
async def test_a_message_with_no_word_is_answered_not_dropped(rig: Rig, text: str) -> None:
    """No first word is no chat command: the message is a turn like any other."""
    await rig.gateway.deliver(envelope(text, message_id="blank"))
    await until(lambda: rig.turns.started == [text])
    rig.turns.finish(text)
    await until(lambda: rig.outbox.texts == [f"answer to {text}"])
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="blank"))
    assert entry is not None and entry.status is InboxStatus.DONE


async def test_redelivery_is_a_no_op(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("hi", message_id="m1"))
    await rig.gateway.deliver(envelope("hi", message_id="m1"))
    rig.turns.finish("hi")
    await until(lambda: rig.outbox.texts == ["answer to hi"])
    await rig.gateway.deliver(envelope("hi", message_id="m1"))
    await rig.gateway.drain(5.0)
    assert rig.turns.started == ["hi"]


async def test_recovery_does_not_requeue_what_is_already_queued(rig: Rig) -> None:
    """A message admitted before start-up recovery runs must not be queued twice."""
    await rig.gateway.deliver(envelope("early"))
    requeued, interrupted = await rig.gateway.recover()
    assert (requeued, interrupted) == (0, 0)
    rig.turns.finish("early")
    await until(lambda: rig.outbox.texts == ["answer to early"])
    assert rig.turns.started == ["early"]


async def test_the_runner_not_the_gateway_marks_the_entry_processing(rig: Rig) -> None:
    """The runner marks it together with its first record (bot.agent.loop); a runner that
    records nothing leaves the entry ``received`` until the gateway marks it done."""
    await rig.gateway.deliver(envelope("hi", message_id="m1"))
    await until(lambda: rig.turns.started == ["hi"])
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="m1"))
    assert entry is not None and entry.status is InboxStatus.RECEIVED
    rig.turns.finish("hi")
    await until(lambda: rig.gateway.active_turns == 0)
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="m1"))
    assert entry is not None and entry.status is InboxStatus.DONE


async def test_recovery_runs_unstarted_messages_and_tells_cut_off_senders(rig: Rig) -> None:
    """What a crash leaves: an entry whose turn had begun (``processing``, committed with
    its user message) and one queued behind it that never started (``received``)."""
    started, queued = envelope("cut off", message_id="m1"), envelope("waiting", message_id="m2")
    for env in (started, queued):
        await rig.store.inbox.admit(
            InboxKey(channel=str(env.channel), message_id=env.message_id),
            envelope_id=env.envelope_id,
            session_key="console.main:c1",
            payload=envelope_to_json(env),
        )
    work = UnitOfWork().mark_inbox(
        InboxKey(channel="console.main", message_id="m1"), InboxStatus.PROCESSING
    )
    work.append_history("console.main:c1", "t1", [ChatMessage(role="user", content="cut off")])
    await rig.store.commit(work)
    assert await rig.gateway.recover() == (1, 1)
    await until(lambda: rig.turns.started == ["waiting"])
    rig.turns.finish("waiting")
    await until(lambda: len(rig.outbox.texts) == 2)
    assert rig.outbox.texts == [SHUTDOWN_MESSAGE, "answer to waiting"]
    cut_off = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="m1"))
    assert cut_off is not None and cut_off.status is InboxStatus.FAILED


async def test_a_database_error_that_is_no_lock_is_not_retried(rig: Rig) -> None:
    """A constraint failure (here raised by a trigger of the real database) fails the same
    way every time: the sender is told after one attempt."""
    await rig.store.db.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON inbox BEGIN SELECT RAISE(ABORT, 'no'); END"
    )
    await rig.gateway.deliver(envelope("hi"))
    assert rig.access.attempts == 1
    assert rig.outbox.texts == [FAILURE_MESSAGE]
    assert rig.turns.started == []


async def test_a_locked_database_is_tried_again(rig: Rig, tmp_path: Path) -> None:
    """Another connection holds the write lock during the first attempt and lets go before
    the second: the message is admitted and answered, and the sender sees no error."""
    await rig.store.db.execute("PRAGMA busy_timeout = 0")  # fail at once instead of waiting
    other = sqlite3.connect(tmp_path / "h.db", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        rig.access.on_check = lambda attempt: other.rollback() if attempt == 2 else None
        await rig.gateway.deliver(envelope("hi"))
    finally:
        other.close()
    assert rig.access.attempts == 2
    rig.turns.finish("hi")
    await until(lambda: rig.outbox.texts == ["answer to hi"])


async def test_a_turn_queued_when_the_drain_begins_is_left_for_the_restart(rig: Rig) -> None:
    """One process stopping begins no queued turn (the end of the drain would cut it off):
    its entry stays ``received`` for start-up recovery, and the running turn finishes."""
    await rig.gateway.deliver(envelope("first", message_id="m1"))
    await rig.gateway.deliver(envelope("second", message_id="m2"))
    await until(lambda: rig.turns.started == ["first"])
    drain = asyncio.create_task(rig.gateway.drain(30.0))
    await until(lambda: rig.gateway.draining)
    rig.turns.finish("first")
    assert await drain is True
    assert rig.turns.started == ["first"]
    assert rig.outbox.texts == ["answer to first"]
    assert rig.gateway.idle
    entry = await rig.store.inbox.get(InboxKey(channel="console.main", message_id="m2"))
    assert entry is not None and entry.status is InboxStatus.RECEIVED
