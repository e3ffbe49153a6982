"""``hatchway_tokens_total`` and ``hatchway_cost_total``: a real turn through the daemon (the
in-process channel, the OpenAI-compatible fake on loopback) moves them by what the model
reported, labelled by agent, provider, model, channel and token kind, never by user; model
names from replies cannot grow the label set without bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.app import App
from bot.metrics import MAX_MODEL_LABELS, Metrics
from bot.providers.base import Usage
from bot.store import UsageRecord
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake
from tests.ops.test_daemon import metric_samples
from tests.usage.harness import CHANNEL, ask, message, openai_provider, settled, usage_settings

LABELS = {"agent", "provider", "model", "channel", "kind"}


def tokens(kind: str, model: str = "fake-model") -> tuple[str, tuple[tuple[str, str], ...]]:
    labels = {
        "agent": "default",
        "provider": "main",
        "model": model,
        "channel": "console.main",
        "kind": kind,
    }
    return ("hatchway_tokens_total", tuple(sorted(labels.items())))


async def test_a_turn_moves_tokens_and_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    metrics = Metrics()
    async with OpenAIFake() as model:
        model.queue_tool_calls([("calculator", {"expression": "6*7"})])
        model.queue_text("It is 42.")
        settings = usage_settings(
            tmp_path,
            {"main": openai_provider(model.base_url, tool_mode="native")},
            pricing={"fake-model": {"input": 1000, "output": 2000}},
        )
        channel = FakeChannel(CHANNEL)
        async with App(settings, channels={str(CHANNEL): channel}, metrics=metrics) as app:
            await channel.running.wait()
            await ask(channel, message(user="secret-user-4711"), "It is 42.")
            await settled(app)
    page = metrics.render().decode()
    samples = metric_samples(page)
    # two calls of 7 input (11 prompt tokens, 4 of them cached) and 7 output tokens each
    assert samples[tokens("input")] == 14
    assert samples[tokens("output")] == 14
    assert samples[tokens("cache_read")] == 8
    assert tokens("cache_write") not in samples  # none reported: no series
    cost = dict(tokens("input")[1])
    del cost["kind"]
    assert samples[("hatchway_cost_total", tuple(sorted(cost.items())))] == pytest.approx(
        2 * (7 * 1000 + 4 * 1000 + 7 * 2000) / 1e6
    )
    for name, labels in samples:
        if name in ("hatchway_tokens_total", "hatchway_cost_total"):
            assert {k for k, _ in labels} <= LABELS
    assert "secret-user-4711" not in page


def test_model_labels_are_capped() -> None:
    metrics = Metrics()
    for n in range(MAX_MODEL_LABELS + 10):
        metrics.usage_recorded(record(f"server-model-{n}"))
    metrics.usage_recorded(record("server-model-0"))
    samples = metric_samples(metrics.render().decode())
    models = {dict(labels)["model"] for name, labels in samples if name == "hatchway_tokens_total"}
    assert len(models) == MAX_MODEL_LABELS + 1  # plus "other"
    assert samples[tokens("output", "other")] == 10 * 3
    assert samples[tokens("output", "server-model-0")] == 2 * 3


def record(model: str) -> UsageRecord:
    return UsageRecord(
        at=0.0,
        turn_id="t",
        session_key="console.main:c1",
        channel="console.main",
        conversation_id="c1",
        user_id="u1",
        agent="default",
        provider="main",
        model=model,
        usage=Usage(input_tokens=5, output_tokens=3),
        latency_ms=1,
        cost=None,
    )
