"""``Gateway.wait_idle``: returns once every admitted message has been answered or has failed
(what ``hatchway chat`` waits for at the end of piped input)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest

from bot.config import parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway import Gateway, SessionControl, TurnReply
from bot.store import Store
from bot.turn import TurnIdentity
from tests.fakes.channel import FakeChannel
from tests.gateway.test_recovery import AllowAll

REF = ChannelRef(kind="console", alias="main")
#: Bounds a failure only: every wait here is on an event.
WITHIN_S = 60.0


class Held:
    """Turns that end when the test releases them (or when cancelled)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._began: dict[str, asyncio.Event] = {}
        self._release: dict[str, asyncio.Event] = {}

    def release(self, text: str) -> None:
        self._release.setdefault(text, asyncio.Event()).set()

    async def began(self, text: str) -> None:
        """Wait until the turn of ``text`` has started."""
        async with asyncio.timeout(WITHIN_S):
            await self._began.setdefault(text, asyncio.Event()).wait()

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        text = turn.envelope.text
        self.started.append(text)
        self._began.setdefault(text, asyncio.Event()).set()
        gate = self._release.setdefault(text, asyncio.Event())
        control.on_cancel(lambda reason: gate.set())
        await gate.wait()
        return TurnReply(text=f"answer to {text}")


class WatchedSlots(asyncio.Semaphore):
    """The gateway's cap on running turns, telling when a turn has to wait for a slot."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.waiting = asyncio.Event()

    async def acquire(self) -> Literal[True]:
        if self.locked():
            self.waiting.set()
        return await super().acquire()


def envelope(text: str, *, conversation: str = "terminal") -> IngressEnvelope:
    return IngressEnvelope(
        channel=REF,
        message_id=f"{conversation}:{text}",
        conversation_id=conversation,
        sender=Sender(id="ana"),
        text=text,
        reply_target=DeliveryTarget(channel=REF, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


async def make_gateway(
    tmp_path: Path, turns: Held, channel: FakeChannel, max_turns: int
) -> AsyncIterator[Gateway]:
    store = await Store.open(tmp_path / "h.db")
    gateway = Gateway(
        settings=parse_settings(
            {"state_dir": str(tmp_path), "agent": {"max_concurrent_turns": max_turns}},
            require_provider=False,
        ),
        store=store,
        access=AllowAll(),
        run_turn=turns,
        channel_for=lambda ref: channel,
    )
    gateway._sessions._slots = WatchedSlots(max_turns)
    task = asyncio.create_task(gateway.run())
    await asyncio.sleep(0)  # its task group opens before the first message is delivered
    try:
        yield gateway
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()


@pytest.fixture
def turns() -> Held:
    return Held()


@pytest.fixture
def channel() -> FakeChannel:
    return FakeChannel(REF)


@pytest.fixture
async def gateway(tmp_path: Path, turns: Held, channel: FakeChannel) -> AsyncIterator[Gateway]:
    async for made in make_gateway(tmp_path, turns, channel, max_turns=32):
        yield made


@pytest.fixture
async def one_slot(tmp_path: Path, turns: Held, channel: FakeChannel) -> AsyncIterator[Gateway]:
    async for made in make_gateway(tmp_path, turns, channel, max_turns=1):
        yield made


async def test_idle_waits_for_every_queued_message_to_be_answered(
    gateway: Gateway, turns: Held, channel: FakeChannel
) -> None:
    assert gateway.idle
    await gateway.wait_idle()  # nothing admitted: returns at once
    for text in ("one", "two", "three"):
        await gateway.deliver(envelope(text))
    waiting = asyncio.create_task(gateway.wait_idle())
    for text in ("one", "two"):
        await turns.began(text)
        turns.release(text)
        await channel.wait_for(f"answer to {text}", within_s=WITHIN_S)
        assert not waiting.done() and not gateway.idle
    await turns.began("three")
    turns.release("three")
    await asyncio.wait_for(waiting, WITHIN_S)
    assert channel.texts == ["answer to one", "answer to two", "answer to three"]
    assert gateway.idle


async def test_a_turn_waiting_for_a_slot_is_not_idle(
    one_slot: Gateway, turns: Held, channel: FakeChannel
) -> None:
    """With the global cap reached, a session's worker holds its turn while it waits for a
    slot: neither queued nor running by the counts, yet not answered."""
    slots = one_slot._sessions._slots
    assert isinstance(slots, WatchedSlots)
    await one_slot.deliver(envelope("first", conversation="a"))
    await turns.began("first")
    await one_slot.deliver(envelope("second", conversation="b"))
    waiting = asyncio.create_task(one_slot.wait_idle())
    async with asyncio.timeout(WITHIN_S):
        await slots.waiting.wait()  # second's worker took it off the queue, waits for a slot
    assert one_slot.queue_depth() == 0 and one_slot.active_turns == 1
    assert turns.started == ["first"]
    turns.release("first")
    await channel.wait_for("answer to first", within_s=WITHIN_S)
    await turns.began("second")
    assert not waiting.done() and not one_slot.idle
    turns.release("second")
    await asyncio.wait_for(waiting, WITHIN_S)


async def test_stop_dropping_the_queue_leaves_the_gateway_idle(
    gateway: Gateway, turns: Held, channel: FakeChannel
) -> None:
    await gateway.deliver(envelope("long"))
    await gateway.deliver(envelope("queued"))
    await turns.began("long")
    await gateway.deliver(envelope("/stop"))
    await asyncio.wait_for(gateway.wait_idle(), WITHIN_S)
    assert turns.started == ["long"]
