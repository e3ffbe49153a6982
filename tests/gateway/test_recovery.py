"""Start-up recovery of the inbox on a real SQLite file: what is replayed, what the sender is
told, and console input, which is never replayed into a later run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.config import parse_settings
from bot.envelope import (
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_to_json,
)
from bot.gateway import SHUTDOWN_MESSAGE, Gateway, SessionControl, TurnReply
from bot.gateway.recovery import NOT_REPLAYED
from bot.store import InboxKey, InboxStatus, Store, UnitOfWork
from bot.turn import TurnIdentity
from tests.fakes.channel import FakeChannel
from tests.gateway.test_gateway import AllowAll, until

CONSOLE = ChannelRef(kind="console", alias="main")
TELEGRAM = ChannelRef(kind="telegram", alias="main")


class Answering:
    """A turn runner that answers every message at once and records the message id of each
    run."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        self.ran.append(turn.envelope.message_id)
        return TurnReply(text=f"answer to {turn.envelope.text}")


@dataclass
class Rig:
    gateway: Gateway
    turns: Answering
    channel: FakeChannel
    store: Store


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    store = await Store.open(tmp_path / "h.db")
    turns, channel = Answering(), FakeChannel(CONSOLE)
    gateway = Gateway(
        settings=parse_settings({"state_dir": str(tmp_path)}, require_provider=False),
        store=store,
        access=AllowAll(),
        run_turn=turns,
        channel_for=lambda ref: channel,
    )
    task = asyncio.create_task(gateway.run())
    await asyncio.sleep(0)
    try:
        yield Rig(gateway, turns, channel, store)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()


def envelope(text: str, *, ref: ChannelRef, replay: bool) -> IngressEnvelope:
    return IngressEnvelope(
        channel=ref,
        message_id=f"{ref}:{text}",
        conversation_id="c1",
        sender=Sender(id="u1"),
        text=text,
        reply_target=DeliveryTarget(channel=ref, conversation_id="c1"),
        is_direct=True,
        addressed_to_bot=True,
        capabilities=Capabilities(replay_on_restart=replay),
    )


def key(env: IngressEnvelope) -> InboxKey:
    return InboxKey(channel=str(env.channel), message_id=env.message_id)


async def left_by_a_crash(store: Store, env: IngressEnvelope, status: InboxStatus) -> None:
    """An inbox entry as a process that died left it: ``received`` (never started) or
    ``processing`` (its turn began: the user message is in history)."""
    await store.inbox.admit(
        key(env),
        envelope_id=env.envelope_id,
        session_key=f"{env.channel}:c1",
        payload=envelope_to_json(env),
    )
    if status is InboxStatus.PROCESSING:
        work = UnitOfWork().mark_inbox(key(env), InboxStatus.PROCESSING)
        work.append_history(f"{env.channel}:c1", "t-old", [])
        await store.commit(work)


async def status_of(store: Store, env: IngressEnvelope) -> tuple[InboxStatus, str | None]:
    entry = await store.inbox.get(key(env))
    assert entry is not None
    return entry.status, entry.error


@pytest.mark.parametrize("status", [InboxStatus.RECEIVED, InboxStatus.PROCESSING])
async def test_console_input_left_unanswered_is_dropped_quietly(
    rig: Rig, status: InboxStatus
) -> None:
    """Neither replayed nor answered with "ask again": the terminal that typed it is gone."""
    typed = envelope("three", ref=CONSOLE, replay=False)
    await left_by_a_crash(rig.store, typed, status)
    with capture_logs() as logs:
        assert await rig.gateway.recover() == (0, 0)
    assert await status_of(rig.store, typed) == (InboxStatus.FAILED, NOT_REPLAYED)
    await rig.gateway.drain(5.0)
    assert rig.turns.ran == []
    assert rig.channel.texts == []
    dropped = [e for e in logs if e["event"] == "inbox_entry_not_replayed"]
    assert [(e["message_id"], e["was"]) for e in dropped] == [(typed.message_id, status.value)]
    assert any(e["event"] == "inbox_recovered" and e["dropped"] == 1 for e in logs)


async def test_other_channels_are_still_replayed_and_told_beside_dropped_console_input(
    rig: Rig,
) -> None:
    console_cut = envelope("two", ref=CONSOLE, replay=False)
    console_waiting = envelope("three", ref=CONSOLE, replay=False)
    chat_cut = envelope("cut off", ref=TELEGRAM, replay=True)
    chat_waiting = envelope("waiting", ref=TELEGRAM, replay=True)
    await left_by_a_crash(rig.store, console_cut, InboxStatus.PROCESSING)
    await left_by_a_crash(rig.store, console_waiting, InboxStatus.RECEIVED)
    await left_by_a_crash(rig.store, chat_cut, InboxStatus.PROCESSING)
    await left_by_a_crash(rig.store, chat_waiting, InboxStatus.RECEIVED)
    assert await rig.gateway.recover() == (1, 1)
    await until(lambda: len(rig.channel.texts) == 2)
    assert rig.channel.texts == [SHUTDOWN_MESSAGE, "answer to waiting"]
    assert rig.turns.ran == [chat_waiting.message_id]
    for dropped in (console_cut, console_waiting):
        assert await status_of(rig.store, dropped) == (InboxStatus.FAILED, NOT_REPLAYED)
    # a second start finds nothing left to do
    await until(lambda: rig.gateway.active_turns == 0)
    assert await rig.gateway.recover() == (0, 0)


async def test_an_entry_stored_before_the_capability_existed_is_replayed(rig: Rig) -> None:
    """Payloads written before ``replay_on_restart`` existed lack it: they replay, as then."""
    old = envelope("from before", ref=TELEGRAM, replay=True)
    payload = envelope_to_json(old).replace(', "replay_on_restart": true', "")
    assert "replay_on_restart" not in payload
    await rig.store.inbox.admit(
        key(old), envelope_id=old.envelope_id, session_key="telegram.main:c1", payload=payload
    )
    assert await rig.gateway.recover() == (1, 0)
    await until(lambda: rig.channel.texts == ["answer to from before"])
