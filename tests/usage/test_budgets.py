"""Budgets in the daemon: the in-process channel, the OpenAI-compatible fake on loopback, a
real SQLite file.

A turn that uses a budget up mid-way finishes the step in progress (its model call and that
step's tool call) and makes no further model call: the user gets what was said so far and
the notice. A cost budget counts the priced calls, a monthly one names the 1st of the next
month; one conversation's spent budget leaves another's alone; two daemons on one database
(replicas) see each other's calls once they read the sums again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.providers.base import Usage
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake
from tests.usage.harness import (
    CHANNEL,
    ask,
    message,
    openai_provider,
    rows_of,
    settled,
    usage_settings,
)


@pytest.fixture(autouse=True)
def _loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
async def model() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        fake.usage = {"prompt_tokens": 80, "completion_tokens": 30}  # 110 tokens a call
        yield fake


async def test_a_turn_that_spends_the_budget_midway_ends_after_its_step(
    model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_tool_calls([("calculator", {"expression": "6*7"})], text="Let me work it out.")
    model.queue_text("never asked for")
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url, tool_mode="native")},
        budgets={"per_conversation": {"daily_tokens": 100}},
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        await ask(channel, message("what is 6*7?"), "budget is used up")
        await settled(app)
        [row] = await rows_of(app, 1)
        [call] = await app.store.tool_calls.for_turn(row.turn_id)
        history = await app.store.history.load(row.session_key)

    assert len(model.requests) == 1  # no further model call
    assert (call.tool, call.status, call.observation) == ("calculator", "executed", "42")
    assert [m.role for m in history] == ["user", "assistant", "tool"]
    answer = channel.texts[-1]
    assert answer == (
        "Let me work it out.\n\n"
        "This conversation's daily budget is used up; it resets at 00:00 UTC."
    )
    assert row.usage == Usage(input_tokens=80, output_tokens=30)


async def test_a_cost_budget_counts_priced_calls_per_user(
    model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("first answer")
    model.queue_text("second answer")
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url)},
        # 80 * 100 + 30 * 300 per million: 0.017 a call
        pricing={"fake-model": {"input": 100, "output": 300}},
        budgets={"per_user": {"daily_cost": 0.03}, "time_zone": "Europe/Berlin"},
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        await ask(channel, message(user="ann", conversation="a"), "first answer")
        await ask(channel, message(user="ann", conversation="b"), "second answer")
        await settled(app)
        # 0.034 spent: the user is stopped in any conversation, another user is not
        await ask(channel, message(user="ann", conversation="c"), "Your daily budget")
        model.queue_text("bob's answer")
        await ask(channel, message(user="bob", conversation="c"), "bob's answer")
        await settled(app)
    assert channel.texts[-2] == "Your daily budget is used up; it resets at 00:00 Europe/Berlin."
    assert len(model.requests) == 3


async def test_a_monthly_agent_budget_names_the_first_of_next_month(
    model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("the only answer this month")
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url)},
        budgets={"agents": {"default": {"monthly_tokens": 50}}, "time_zone": "Asia/Tokyo"},
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}):
        await channel.running.wait()
        await ask(channel, message(conversation="x"), "the only answer")
        await ask(channel, message(conversation="y"), "monthly budget")
    now = datetime.now(ZoneInfo("Asia/Tokyo"))
    first = (now.replace(day=1) + timedelta(days=32)).replace(day=1)
    assert channel.texts[-1] == (
        "This assistant's monthly budget is used up; it resets on "
        f"{first.day} {first:%B} at 00:00 Asia/Tokyo."
    )
    assert len(model.requests) == 1


async def test_another_conversation_keeps_its_own_budget(model: OpenAIFake, tmp_path: Path) -> None:
    model.queue_text("answer in a")
    model.queue_text("answer in b")
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url)},
        budgets={"per_conversation": {"daily_tokens": 100}},
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}):
        await channel.running.wait()
        await ask(channel, message(conversation="a"), "answer in a")  # crosses: still answered
        await ask(channel, message(conversation="a"), "budget is used up")
        await ask(channel, message(conversation="b"), "answer in b")
    assert len(model.requests) == 2


async def test_replicas_see_each_others_calls_when_they_read_the_sums_again(
    model: OpenAIFake, tmp_path: Path
) -> None:
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url)},
        # 110 tokens a call: a sender's first call leaves room, the second spends the budget
        budgets={"per_user": {"daily_tokens": 150}, "refresh_s": 0.001},
    )
    one, two = FakeChannel(CHANNEL), FakeChannel(CHANNEL)
    for answer in ("bob 1", "ann 1", "ann 2", "bob 2"):
        model.queue_text(answer)
    async with (
        App(settings, channels={str(CHANNEL): one}) as first,
        App(settings, channels={str(CHANNEL): two}) as second,
    ):
        await one.running.wait()
        await two.running.wait()
        await ask(two, message(user="bob"), "bob 1")  # replica two reads all the sums
        await settled(second)
        await ask(one, message(user="ann"), "ann 1")
        await ask(one, message(user="ann"), "ann 2")
        await settled(first)
        # replica two reads the rows written since its last read: its own call is counted
        # once (bob has room for one more), replica one's two are there (ann has none)
        await ask(two, message(user="bob", conversation="c2"), "bob 2")
        await ask(two, message(user="ann", conversation="c3"), "Your daily budget")
        await ask(two, message(user="bob", conversation="c4"), "Your daily budget")
        await settled(second)
    assert len(model.requests) == 4


async def test_a_scheduled_run_counts_against_its_conversations_agent(
    model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("the scheduled report")
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(model.base_url)},
        budgets={"agents": {"default": {"daily_tokens": 100}}},
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        job = replace(message("[Scheduled job] the report", user="creator"), background=True)
        await app.gateway.deliver(job)
        await channel.wait_for("the scheduled report")
        await settled(app)
        [row] = await rows_of(app, 1)
        # the agent's budget is spent now, by the scheduled run: a person's turn is refused
        await ask(channel, message(user="ann", conversation="other"), "assistant's daily")
        await settled(app)
    assert (row.agent, row.user_id) == ("default", "creator")
    assert len(model.requests) == 1


async def test_a_reload_applies_new_budgets_to_the_next_turn(
    model: OpenAIFake, tmp_path: Path
) -> None:
    model.queue_text("before the budget")
    providers = {"main": openai_provider(model.base_url)}
    channel = FakeChannel(CHANNEL)
    async with App(usage_settings(tmp_path, providers), channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        await ask(channel, message(), "before the budget")
        await settled(app)
        # the call before the reload counts: the sums come from the table
        app.reload(usage_settings(tmp_path, providers, budgets={"per_user": {"daily_tokens": 50}}))
        await ask(channel, message(conversation="c2"), "Your daily budget")
    assert len(model.requests) == 1
