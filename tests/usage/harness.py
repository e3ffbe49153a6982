"""What the usage tests share: a daemon (:class:`bot.app.App`) on a real SQLite file with the
in-process channel, its providers the OpenAI-compatible or Anthropic loopback fakes, and the
messages a user sends it."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.store import UsageRecord
from tests.fakes.channel import FakeChannel

CHANNEL = ChannelRef(kind="console", alias="main")
WAIT_S = 30.0  # bounds a failure only: a loaded machine may be slow
_ids = itertools.count(1)


def openai_provider(base_url: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "openai", "base_url": base_url, "model": "fake-model", **extra}


def anthropic_provider(base_url: str, **extra: Any) -> dict[str, Any]:
    """An Anthropic provider on loopback (a local endpoint: no API key needed)."""
    return {"kind": "anthropic", "base_url": base_url, "model": "claude-fake", **extra}


def usage_settings(
    tmp_path: Path,
    providers: Mapping[str, Mapping[str, Any]],
    *,
    fallback: tuple[str, ...] = (),
    **tables: Any,
) -> Settings:
    """The console channel open to anyone, ``providers`` (the first is the agent's), and any
    other tables (``pricing``, ``budgets``)."""
    first = next(iter(providers))
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"provider": first, "fallback": list(fallback)},
            "providers": {name: dict(p) for name, p in providers.items()},
            "channels": {"console": {"main": {}}},
            **tables,
        },
        environ={},
    )


def message(
    text: str = "what is six times seven?", *, user: str = "u1", conversation: str = "c1"
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=CHANNEL,
        message_id=f"m{next(_ids)}",
        conversation_id=conversation,
        sender=Sender(id=user),
        text=text,
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


async def ask(channel: FakeChannel, envelope: IngressEnvelope, answer: str) -> None:
    """Deliver ``envelope`` and wait until a sent text contains ``answer``."""
    assert channel.host is not None
    await channel.host.deliver(envelope)
    await channel.wait_for(answer, within_s=WAIT_S)


async def settled(app: App) -> None:
    """Wait until no turn runs (the gateway marks an entry after its reply is sent)."""
    for _ in range(int(WAIT_S / 0.01)):
        if not app.gateway.active_turns:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("a turn is still running")


async def rows_of(app: App, count: int) -> list[UsageRecord]:
    """The usage rows once there are ``count`` of them (a row the meter's own task writes
    may come after the reply)."""
    for _ in range(int(WAIT_S / 0.01)):
        rows = await app.store.usage.since(0)
        if len(rows) >= count:
            return rows
        await asyncio.sleep(0.01)
    raise AssertionError(f"expected {count} usage rows, found {len(rows)}")
