"""Every model call of a turn is on record with what the model server reported: the daemon
behind the in-process channel, its provider the OpenAI-compatible or Anthropic fake on
loopback (JSON and streamed replies), a real SQLite file. A server that reports no usage gets
an estimate, marked; the fallback chain records the provider that answered; a call no record
of the turn carried (an empty answer) is written by the meter's own task."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.providers.base import Usage
from bot.store import UsageRecord
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake
from tests.usage.harness import (
    CHANNEL,
    anthropic_provider,
    ask,
    message,
    openai_provider,
    rows_of,
    settled,
    usage_settings,
)

PRICING = {"fake-model": {"input": 2.0, "output": 8.0, "cache_read": 0.5}}


@pytest.fixture(autouse=True)
def _loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
async def openai_fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as fake:
        yield fake


def expected_cost(usage: Usage) -> float:
    return (
        usage.input_tokens * 2.0 + usage.output_tokens * 8.0 + usage.cache_read_tokens * 0.5
    ) / 1e6


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_tool_turn_records_both_calls_as_reported(
    openai_fake: OpenAIFake, tmp_path: Path, streamed: bool
) -> None:
    openai_fake.queue_tool_calls([("calculator", {"expression": "6*7"})])
    openai_fake.usage = {
        "prompt_tokens": 1500,
        "completion_tokens": 40,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    settings = usage_settings(
        tmp_path,
        {"main": openai_provider(openai_fake.base_url, stream=streamed, tool_mode="native")},
        pricing=PRICING,
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        sent = message(user="u7", conversation="room-1")
        openai_fake.queue_text("It is 42.")
        await ask(channel, sent, "It is 42.")
        await settled(app)
        rows = await rows_of(app, 2)

    reported = Usage(input_tokens=476, output_tokens=40, cache_read_tokens=1024)
    assert [r.usage for r in rows] == [reported, reported]
    assert len(openai_fake.requests) == 2
    first, second = rows
    assert first.turn_id == second.turn_id
    for row in rows:
        assert (row.channel, row.conversation_id, row.user_id) == ("console.main", "room-1", "u7")
        assert (row.agent, row.provider, row.model) == ("default", "main", "fake-model")
        assert row.session_key.startswith("console.main:room-1")
        assert row.cost == pytest.approx(expected_cost(reported))
        assert row.latency_ms >= 0
    assert first.at <= second.at


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_cache_tokens_on_record(tmp_path: Path, streamed: bool) -> None:
    async with AnthropicFake() as fake:
        fake.usage = {
            "input_tokens": 30,
            "output_tokens": 12,
            "cache_creation_input_tokens": 2048,
            "cache_read_input_tokens": 512,
        }
        fake.queue_text("Hello from Claude.")
        settings = usage_settings(
            tmp_path,
            {"claude": anthropic_provider(fake.base_url, stream=streamed)},
            pricing={
                "claude-*": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}
            },
        )
        channel = FakeChannel(CHANNEL)
        async with App(settings, channels={str(CHANNEL): channel}) as app:
            await channel.running.wait()
            await ask(channel, message("hi"), "Hello from Claude.")
            await settled(app)
            [row] = await rows_of(app, 1)
    assert row.usage == Usage(
        input_tokens=30, output_tokens=12, cache_write_tokens=2048, cache_read_tokens=512
    )
    assert (row.provider, row.model) == ("claude", "claude-fake")
    assert row.cost == pytest.approx((30 * 3 + 12 * 15 + 2048 * 3.75 + 512 * 0.3) / 1e6)


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_server_without_usage_gets_an_estimate(
    openai_fake: OpenAIFake, tmp_path: Path, streamed: bool
) -> None:
    openai_fake.usage = None  # not even with stream_options.include_usage
    answer = "Forty-two, which is six times seven."
    openai_fake.queue_text(answer)
    settings = usage_settings(
        tmp_path, {"main": openai_provider(openai_fake.base_url, stream=streamed)}
    )
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        await ask(channel, message(), answer)
        await settled(app)
        [row] = await rows_of(app, 1)
    if streamed:
        assert openai_fake.requests[0].body["stream_options"] == {"include_usage": True}
    assert row.usage.estimated
    # the prompt holds the system prompt, the question and every tool's definition
    assert row.usage.input_tokens > len(settings.agent.system_prompt) // 4
    assert row.usage.output_tokens == -(-len(answer) // 4)
    assert (row.usage.cache_write_tokens, row.usage.cache_read_tokens) == (0, 0)
    assert row.cost is None  # no [pricing] entry: tokens only


async def test_the_fallback_provider_that_answered_is_recorded(tmp_path: Path) -> None:
    async with OpenAIFake() as primary, OpenAIFake(model="backup-model") as backup:
        primary.queue_error(400, message="model not found")  # not retried: next provider
        backup.queue_text("from the backup")
        settings = usage_settings(
            tmp_path,
            {
                "primary": openai_provider(primary.base_url),
                "backup": openai_provider(backup.base_url, model="backup-model"),
            },
            fallback=("backup",),
            pricing=PRICING,
        )
        channel = FakeChannel(CHANNEL)
        async with App(settings, channels={str(CHANNEL): channel}) as app:
            await channel.running.wait()
            await ask(channel, message(), "from the backup")
            await settled(app)
            [row] = await rows_of(app, 1)
    assert (row.provider, row.model) == ("backup", "backup-model")
    assert row.cost is None  # backup-model has no price
    assert row.usage == Usage(input_tokens=7, output_tokens=7, cache_read_tokens=4)


async def test_an_empty_answer_is_recorded_by_the_meter(
    openai_fake: OpenAIFake, tmp_path: Path
) -> None:
    openai_fake.queue_text("")
    settings = usage_settings(tmp_path, {"main": openai_provider(openai_fake.base_url)})
    channel = FakeChannel(CHANNEL)
    async with App(settings, channels={str(CHANNEL): channel}) as app:
        await channel.running.wait()
        await ask(channel, message(), "empty answer")
        rows: list[UsageRecord] = await rows_of(app, 1)
    assert [r.usage for r in rows] == [Usage(input_tokens=7, output_tokens=7, cache_read_tokens=4)]
