"""The metrics operations.md promises move when the daemon works: a real turn with tool calls
(console channel, the real ``openai`` SDK against the loopback fake, the built-in tools, a
real SQLite file), then ``/metrics`` scraped over loopback HTTP. Once in-process from the
pieces ``Daemon`` composes, once as ``hatchway run`` in its own process."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import aiohttp
import pytest

from bot.app import App
from bot.config import ServerConfig
from bot.metrics import MAX_TOOL_LABELS, MeteredProvider, Metrics
from bot.ops.health import HealthRoutes, add_health_routes
from bot.ops.web import HttpServer
from bot.providers.factory import build_provider
from bot.tools.hooks import HookCall
from bot.tools.outcome import OutcomeReason, executed, interrupted, not_executed
from bot.turn import TurnIdentity
from tests.fakes.openai_server import OpenAIFake
from tests.ops.conftest import HeldOpenAI, write_config
from tests.ops.daemon_process import USER, start_daemon
from tests.ops.test_daemon import metric_samples
from tests.test_console import Terminal, settings_for
from tests.tools.harness import make_envelope

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def tool_calls(tool: str, outcome: str, reason: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    labels = (("outcome", outcome), ("reason", reason), ("tool", tool))
    return ("hatchway_tool_calls_total", labels)


# one model reply calling a tool that works, one that fails, and one the model made up
CALLS: list[tuple[str, Mapping[str, object]]] = [
    ("calculator", {"expression": "6*7"}),
    ("calculator", {"expression": "1/0"}),
    ("summon_demons", {"how_many": 3}),
]


def assert_turn_counted(samples: Samples) -> None:
    assert samples[tool_calls("calculator", "executed", "none")] == 1
    assert samples[tool_calls("calculator", "executed", "failed")] == 1
    assert samples[tool_calls("unknown", "not_executed", "unknown_tool")] == 1
    assert not any(
        name == "hatchway_tool_calls_total" and ("tool", "summon_demons") in labels
        for name, labels in samples
    )
    assert samples[("hatchway_turns_total", (("status", "completed"),))] == 1
    assert samples[("hatchway_provider_request_seconds_count", (("provider", "default"),))] == 2
    assert samples[("hatchway_inbox_entries", (("status", "done"),))] == 1
    assert samples[("hatchway_channel_up", (("channel", "console.main"),))] == 1


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIFake]:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-000")
    async with OpenAIFake() as server:
        yield server


async def scrape(url: str) -> Samples:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        return metric_samples(await response.text())


async def test_a_turn_with_tool_calls_moves_the_counters(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    metrics = Metrics()
    server = HttpServer(ServerConfig(enabled=True, host="127.0.0.1", port=0))
    terminal = Terminal()
    # composed as Daemon._lifecycle does: metered provider, App with the metrics and the
    # server's web app, health routes, live state tracked
    app = App(
        settings,
        provider=MeteredProvider(build_provider(settings), metrics),
        channels={"console.main": terminal.channel},
        web_app=server.app,
        metrics=metrics,
    )
    add_health_routes(server.app, HealthRoutes(app, metrics))
    fake.queue_tool_calls(CALLS)
    fake.queue_text("It is 42.")
    try:
        async with app:
            await server.start()
            metrics.track(app)
            before = await scrape(f"http://127.0.0.1:{server.port}/metrics")
            assert not any(name == "hatchway_tool_calls_total" for name, _ in before)
            terminal.type("what is 6*7?")
            await terminal.screen.wait_for("It is 42.")
            samples = await scrape(f"http://127.0.0.1:{server.port}/metrics")
    finally:
        terminal.close()
        await server.aclose()
    assert_turn_counted(samples)


@pytest.mark.slow
async def test_the_daemon_counts_tool_calls(tmp_path: Path, llm: HeldOpenAI) -> None:
    config = write_config(tmp_path / "hatchway.toml", llm_url=llm.base_url, allowed_users=[USER])
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        llm.queue_tool_calls(CALLS)
        llm.queue_text("It is 42.")
        await daemon.send_line("what is 6*7?")
        await daemon.wait_stdout("It is 42.")
        code, text = await daemon.get("/metrics")
        assert code == 200
        assert_turn_counted(metric_samples(text))
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0


async def test_tool_labels_never_take_a_name_the_model_made_up() -> None:
    metrics = Metrics()
    turn = TurnIdentity(turn_id="t", session_key="s", envelope=make_envelope())
    hook = HookCall(call_id="c", name="x", arguments={}, turn=turn)
    for reason in (OutcomeReason.MALFORMED_JSON, OutcomeReason.BATCH_FULL):
        await metrics.after_tool_call(hook, not_executed(reason, call_id="c", tool="made_up"))
    for n in range(MAX_TOOL_LABELS + 5):  # a batch interrupted before preparation
        await metrics.after_tool_call(
            hook, interrupted(call_id="c", tool=f"name_{n}", before_launch=True)
        )
    await metrics.after_tool_call(
        hook, executed(call_id="c", tool="name_0", text="ok", duration_s=0)
    )
    samples = metric_samples(metrics.render().decode())
    assert samples[tool_calls("unknown", "not_executed", "malformed_json")] == 1
    assert samples[tool_calls("unknown", "not_executed", "batch_full")] == 1
    assert samples[tool_calls("other", "interrupted", "cancelled")] == 5
    assert samples[tool_calls("name_0", "executed", "none")] == 1
    tools = {
        dict(labels)["tool"] for name, labels in samples if name == "hatchway_tool_calls_total"
    }
    assert len(tools) == MAX_TOOL_LABELS + 2  # plus "unknown" and "other"
