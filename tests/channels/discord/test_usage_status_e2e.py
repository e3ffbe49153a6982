"""End to end: ``/usage`` and ``/status`` as Discord application commands, registered with
the others, through the whole daemon and the real discord.py against the loopback fake.
In a server both are answered through the interaction, ephemerally: ``/usage`` (a person's
own usage and budgets) is seen by its user alone, and nothing of it reaches the channel."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.channel import HealthState
from bot.config import BudgetsConfig
from bot.providers.base import Usage
from bot.store.usage import UsageRecord
from tests.fakes.channel_health import wait_for_health
from tests.fakes.discord_commands import invoke
from tests.fakes.discord_interactions import EPHEMERAL
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import ALICE, BOT_ID, GENERAL, settings_for
from tests.fakes.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.usefixtures("discord_env")


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"})
        yield server


def spent(tokens: int) -> UsageRecord:
    return UsageRecord(
        at=time.time(),
        turn_id="t1",
        session_key=f"discord.main:{GENERAL}",
        channel="discord.main",
        conversation_id=GENERAL,
        user_id=ALICE["id"],
        agent="default",
        provider="default",
        model="m",
        usage=Usage(input_tokens=tokens, output_tokens=0),
        latency_ms=5,
        cost=None,
    )


async def test_usage_and_status_are_ephemeral_answers(fake: FakeDiscord, tmp_path: Path) -> None:
    cfg = settings_for(fake, tmp_path)
    budgets = BudgetsConfig.model_validate({"per_user": {"daily_tokens": 10_000}})
    provider = ScriptedProvider()
    async with App(cfg.model_copy(update={"budgets": budgets}), provider=provider, tools=[]) as app:
        await wait_for_health(app.channels["discord.main"], HealthState.CONNECTED)
        assert {"usage", "status"} <= {c["name"] for c in fake.commands[None]}
        await app.store.usage.record([spent(2_500)])
        usage, deferral = await invoke(fake, "usage", ALICE, GENERAL)
        status, _ = await invoke(fake, "status", ALICE, GENERAL)
        await fake.wait_until(lambda: {usage, status} <= fake.follow_ups.keys())
    assert deferral.body == {"type": 5, "data": {"flags": EPHEMERAL}}
    [answer] = fake.follow_ups[usage]
    assert answer["flags"] == EPHEMERAL
    assert "• today: 2,500 tokens" in answer["content"]
    assert "Your daily tokens: 7,500 tokens left of 10,000 tokens" in answer["content"]
    [told] = fake.follow_ups[status]
    assert told["flags"] == EPHEMERAL and str(told["content"]).startswith("Agent: default")
    assert fake.posted(GENERAL) == []  # nothing in the channel itself
    assert provider.requests == []
