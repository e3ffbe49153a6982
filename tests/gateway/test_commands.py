"""The chat-command router in the real gateway, with the real access policy and a real
SQLite file: who gets an answer to ``/id`` and ``/help``, ``/stop`` and ``/new`` for members
only, and a conversation-wide ``/stop`` that stops only what its sender started."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from bot.chat_commands import CHAT_COMMANDS
from bot.config import Settings, parse_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway import Gateway
from bot.gateway.access import STRANGER_REPLY, AccessPolicy
from bot.gateway.commands import (
    NEW_SESSION,
    NOTHING_OF_YOURS,
    NOTHING_RUNNING,
    STILL_STOPPING,
    command_of,
)
from bot.store import InboxStatus, Store
from bot.turn import SessionControl, TurnIdentity, TurnReply
from tests.fakes.channel import FakeChannel
from tests.gateway.test_gateway import Turns, until

REF = ChannelRef(kind="telegram", alias="main")


def settings(tmp_path: Path, **channel: Any) -> Settings:
    cfg = {"token_env": "T", "allowed_users": ["member", "member2"], **channel}
    return parse_settings(
        {"state_dir": str(tmp_path), "channels": {"telegram": {"main": cfg}}},
        require_provider=False,
    )


def envelope(
    text: str,
    *,
    sender: str = "member",
    conversation: str = "chat1",
    thread: str | None = None,
    direct: bool = True,
    addressed: bool = True,
    scope: str = "session",
    message_id: str | None = None,
    prefix: str = "/",
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=REF,
        message_id=message_id or f"{conversation}:{thread}:{sender}:{text}",
        conversation_id=conversation,
        thread_id=thread,
        sender=Sender(id=sender),
        text=text,
        reply_target=DeliveryTarget(channel=REF, conversation_id=conversation, thread_id=thread),
        is_direct=direct,
        is_group=not direct,
        addressed_to_bot=addressed,
        command_scope=scope,  # type: ignore[arg-type]
        capabilities=Capabilities(command_prefix=prefix),
    )


@dataclass
class Rig:
    gateway: Gateway
    turns: Turns
    channel: FakeChannel
    store: Store

    def said(self) -> list[str]:
        return [text for _, text in self.channel.sent]


async def _rig(tmp_path: Path, turns: Turns | None = None, **channel: Any) -> AsyncIterator[Rig]:
    cfg = settings(tmp_path, **channel)
    store = await Store.open(tmp_path / "h.db")
    turns, fake = turns or Turns(), FakeChannel(REF)
    gateway = Gateway(
        settings=cfg,
        store=store,
        access=AccessPolicy(cfg.channels, store),
        run_turn=turns,
        channel_for=lambda ref: fake,
    )
    task = asyncio.create_task(gateway.run())
    await asyncio.sleep(0)
    try:
        yield Rig(gateway, turns, fake, store)
    finally:
        for event in turns.release.values():
            event.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await store.aclose()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    async for value in _rig(tmp_path):
        yield value


@pytest.mark.parametrize(
    ("text", "command"),
    [("/stop", "stop"), ("/STOP now", "stop"), ("  /Help", "help"), ("stop", ""), ("", "")],
)
def test_command_of(text: str, command: str) -> None:
    assert command_of(text) == command


async def test_id_answers_a_stranger_with_the_ids_an_admin_needs(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("/id", sender="stranger", conversation="-100123"))
    [answer] = rig.said()
    assert "stranger" in answer and "-100123" in answer and "telegram.main" in answer
    assert "[channels.telegram.main]" in answer
    assert rig.turns.started == []


async def test_id_in_a_group_names_the_thread_and_needs_the_bot_addressed(rig: Rig) -> None:
    await rig.gateway.deliver(
        envelope("/id", sender="s", conversation="g", thread="77", direct=False, addressed=False)
    )
    assert rig.said() == []
    await rig.gateway.deliver(
        envelope("/id", sender="s", conversation="g", thread="77", direct=False)
    )
    [answer] = rig.said()
    assert "thread 77" in answer and "g" in answer


async def test_help_lists_every_command_as_it_is_typed_here(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("/help", prefix="/hatchway "))
    [answer] = rig.said()
    for spec in CHAT_COMMANDS:
        assert f"/hatchway {spec.name} — {spec.summary}" in answer


async def test_open_commands_are_rate_limited_per_sender(rig: Rig) -> None:
    for n in range(3):
        await rig.gateway.deliver(envelope("/id", sender="stranger", message_id=f"m{n}"))
    await rig.gateway.deliver(envelope("/id", sender="other", message_id="o"))
    assert len(rig.said()) == 2


@pytest.mark.parametrize(("policy", "direct"), [("dm_policy", True), ("group_policy", False)])
async def test_nothing_is_answered_where_the_policy_is_disabled(
    tmp_path: Path, policy: str, direct: bool
) -> None:
    async for rig in _rig(tmp_path, **{policy: "disabled"}):
        await rig.gateway.deliver(envelope("/id", sender="member", direct=direct))
        await rig.gateway.deliver(envelope("/help", sender="member", direct=direct))
        assert all("Your user id" not in text and "Commands" not in text for text in rig.said())


async def test_a_stranger_cannot_stop_or_reset(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("slow", sender="member"))
    await until(lambda: rig.turns.started == ["slow"])
    await rig.gateway.deliver(envelope("/stop", sender="stranger"))
    await rig.gateway.deliver(envelope("/new", sender="stranger", message_id="n"))
    assert rig.turns.cancelled == []
    assert rig.said() == [STRANGER_REPLY]  # one polite line, then silence


async def test_a_member_stops_and_starts_over_case_insensitively(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("slow"))
    await until(lambda: rig.turns.started == ["slow"])
    await rig.gateway.deliver(envelope("/STOP"))
    await until(lambda: rig.turns.cancelled == ["slow"] and rig.turns.running == 0)
    await until(lambda: rig.gateway.active_turns == 0)  # the turn has left its session
    await rig.gateway.deliver(envelope("/stop", message_id="again"))
    await until(lambda: NOTHING_RUNNING in rig.said())
    await rig.gateway.deliver(envelope("/New"))
    assert NEW_SESSION in rig.said()


async def test_an_unknown_command_is_an_ordinary_message(rig: Rig) -> None:
    await rig.gateway.deliver(envelope("/summarise this"))
    await until(lambda: rig.turns.started == ["/summarise this"])


async def test_a_conversation_wide_stop_stops_only_what_its_sender_started(rig: Rig) -> None:
    group = {"conversation": "C1", "direct": False}
    other_group = {"conversation": "C2", "direct": False}
    await rig.gateway.deliver(envelope("mine in t1", thread="t1", **group))
    await rig.gateway.deliver(envelope("mine on top", **group))
    await rig.gateway.deliver(envelope("queued mine", **group))
    await rig.gateway.deliver(envelope("theirs in t2", thread="t2", sender="member2", **group))
    await rig.gateway.deliver(envelope("mine elsewhere", **other_group))
    await until(lambda: len(rig.turns.started) == 4)
    stop = envelope("/stop", scope="conversation", **group)
    await rig.gateway.deliver(stop)
    await until(lambda: len(rig.turns.cancelled) == 2)
    assert sorted(rig.turns.cancelled) == ["mine in t1", "mine on top"]
    answer = rig.said()[-1]
    assert "Stopped 2 turns" in answer
    assert "in thread t1: “mine in t1”" in answer and "at the top level: “mine on top”" in answer
    assert "Dropped 1 turn" in answer
    assert (await rig.store.inbox.counts()).get(InboxStatus.FAILED) == 1  # the dropped one
    rig.turns.finish("theirs in t2")
    await until(lambda: "answer to theirs in t2" in rig.said())
    await rig.gateway.deliver(replace(stop, message_id="again", envelope_id="again"))
    await until(lambda: rig.said()[-1] == NOTHING_OF_YOURS)


class Lingering(Turns):
    """Turns that go on after a cancel until the test lets them finish (a tool being
    killed, the notice being recorded)."""

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        text = turn.envelope.text
        self.started.append(text)
        gate = self.release.setdefault(text, asyncio.Event())
        control.on_cancel(lambda reason: self.cancelled.append(text))
        await gate.wait()
        return TurnReply(text="⏹ Stopped.")


@pytest.mark.parametrize("scope", ["session", "conversation"])
async def test_a_second_stop_while_the_first_is_finishing_says_so(
    tmp_path: Path, scope: str
) -> None:
    lingering = Lingering()
    async for rig in _rig(tmp_path, lingering):
        await _stop_twice(rig, lingering, scope)


async def _stop_twice(rig: Rig, lingering: Lingering, scope: str) -> None:
    await rig.gateway.deliver(envelope("slow"))
    await until(lambda: lingering.started == ["slow"])
    await rig.gateway.deliver(envelope("/stop", scope=scope, message_id="first"))
    await until(lambda: lingering.cancelled == ["slow"])
    await rig.gateway.deliver(envelope("/stop", scope=scope, message_id="second"))
    await until(lambda: STILL_STOPPING in rig.said())
    assert NOTHING_RUNNING not in rig.said() and NOTHING_OF_YOURS not in rig.said()
    assert lingering.cancelled == ["slow"]  # not cancelled twice
    lingering.finish("slow")
    await until(lambda: "⏹ Stopped." in rig.said())
    await until(lambda: rig.gateway.active_turns == 0)
    await rig.gateway.deliver(envelope("/stop", scope=scope, message_id="third"))
    await until(lambda: rig.said()[-1] in (NOTHING_RUNNING, NOTHING_OF_YOURS))
