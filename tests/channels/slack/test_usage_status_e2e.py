"""End to end: ``/hatchway usage`` and ``/hatchway status`` on Slack, answered by the whole
daemon through the slash command's response URL, ephemerally: a person's own usage and
budgets are seen by them alone, and nothing is posted in the channel."""

from __future__ import annotations

import time
from pathlib import Path

from bot.app import App
from bot.channel import HealthState
from bot.config import BudgetsConfig
from bot.providers.base import Usage
from bot.store.usage import UsageRecord
from tests.fakes.channel_health import wait_for_health
from tests.fakes.scripted_provider import ScriptedProvider
from tests.fakes.slack_server import FakeSlack
from tests.fakes.slack_setup import REF, REQUESTER, daemon_settings, slack_channel


def spent(tokens: int) -> UsageRecord:
    return UsageRecord(
        at=time.time(),
        turn_id="t1",
        session_key=f"{REF}:C0001",
        channel=str(REF),
        conversation_id="C0001",
        user_id=REQUESTER,
        agent="default",
        provider="default",
        model="m",
        usage=Usage(input_tokens=tokens, output_tokens=0),
        latency_ms=5,
        cost=None,
    )


async def test_usage_and_status_are_ephemeral(slack: FakeSlack, tmp_path: Path) -> None:
    budgets = BudgetsConfig.model_validate({"per_conversation": {"daily_tokens": 5_000}})
    cfg = daemon_settings(slack, tmp_path).model_copy(update={"budgets": budgets})
    provider = ScriptedProvider([])
    channel = slack_channel(slack)
    async with App(cfg, provider=provider, channels={str(REF): channel}) as app:
        await wait_for_health(channel, HealthState.CONNECTED)
        await app.store.usage.record([spent(800)])
        usage = slack.slash("usage", user=REQUESTER, channel="C0001")
        await slack.wait_ack(await slack.push("slash_commands", usage))
        (mine,) = await slack.wait_responses(usage["response_url"])
        status = slack.slash("status", user=REQUESTER, channel="C0001")
        await slack.wait_ack(await slack.push("slash_commands", status))
        (told,) = await slack.wait_responses(status["response_url"])
    assert mine["response_type"] == told["response_type"] == "ephemeral"
    assert "• today: 800 tokens" in mine["text"]
    assert "This conversation's daily tokens: 4,200 tokens left of 5,000 tokens" in mine["text"]
    assert told["text"].startswith("Agent: default")
    assert slack.calls_of("chat.postMessage") == slack.calls_of("chat.postEphemeral") == []
    assert provider.requests == []
