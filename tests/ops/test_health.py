"""/healthz, /readyz and /metrics served by the real HTTP server, in process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.channel import ChannelHealth, HealthState
from bot.config import ServerConfig
from bot.errors import StorageError
from bot.metrics import Metrics
from bot.ops.health import HealthRoutes, add_health_routes, assess_readiness
from bot.ops.web import HttpServer


@dataclass(slots=True)
class FakeDaemonState:
    """A readiness and live-state source whose answers the test sets."""

    health: dict[str, ChannelHealth] = field(default_factory=dict)
    database_error: str | None = None
    load: tuple[int, int] = (0, 0)

    def channel_health(self) -> Mapping[str, ChannelHealth]:
        return self.health

    def turn_load(self) -> tuple[int, int]:
        return self.load

    async def check_database(self) -> None:
        if self.database_error is not None:
            raise StorageError(self.database_error)

    async def inbox_counts(self) -> Mapping[str, int]:
        return {"done": 3, "failed": 1}


CONNECTED = ChannelHealth(state=HealthState.CONNECTED)


@pytest.fixture
def state() -> FakeDaemonState:
    return FakeDaemonState(health={"telegram.main": CONNECTED, "slack.ops": CONNECTED})


@pytest.fixture
async def served(state: FakeDaemonState) -> AsyncIterator[tuple[str, HealthRoutes, Metrics]]:
    metrics = Metrics()
    metrics.track(state)
    routes = HealthRoutes(state, metrics)
    server = HttpServer(ServerConfig(enabled=True, host="127.0.0.1", port=0))
    add_health_routes(server.app, routes)
    await server.start()
    try:
        yield f"http://127.0.0.1:{server.port}", routes, metrics
    finally:
        await server.aclose()


async def fetch(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


async def test_ready_when_every_channel_is_connected_and_the_database_writable(
    served: tuple[str, HealthRoutes, Metrics],
) -> None:
    base, _, _ = served
    assert (await fetch(f"{base}/healthz"))[0] == 200
    code, body = await fetch(f"{base}/readyz")
    assert code == 200
    assert json.loads(body) == {
        "ready": True,
        "channels": {"slack.ops": "connected", "telegram.main": "connected"},
        "database": "writable",
        "problems": [],
        "warnings": [],
    }


@pytest.mark.parametrize("problem", [False, True])
async def test_warnings_are_listed_and_never_make_the_daemon_unready(
    state: FakeDaemonState, problem: bool
) -> None:
    warned = ["the embedded demo model answers on telegram.main"]
    routes = HealthRoutes(state, Metrics(), warnings=lambda: warned)
    server = HttpServer(ServerConfig(enabled=True, host="127.0.0.1", port=0))
    add_health_routes(server.app, routes)
    routes.draining = problem
    await server.start()
    try:
        code, body = await fetch(f"http://127.0.0.1:{server.port}/readyz")
    finally:
        await server.aclose()
    answer = json.loads(body)
    assert (code, answer["ready"]) == ((503, False) if problem else (200, True))
    assert answer["warnings"] == warned


@pytest.mark.parametrize(
    ("health", "database_error", "draining", "problem"),
    [
        (ChannelHealth(state=HealthState.STARTING), None, False, "channel slack.ops is starting"),
        (
            ChannelHealth(state=HealthState.RECONNECTING, detail="502 from Slack"),
            None,
            False,
            "channel slack.ops is reconnecting: 502 from Slack",
        ),
        (
            ChannelHealth(state=HealthState.FAILED, detail="invalid_auth"),
            None,
            False,
            "channel slack.ops is failed: invalid_auth",
        ),
        (CONNECTED, "database is locked", False, "database: database is locked"),
        (CONNECTED, None, True, "daemon is draining (shutting down)"),
    ],
)
async def test_not_ready_names_what_is_wrong(
    served: tuple[str, HealthRoutes, Metrics],
    state: FakeDaemonState,
    health: ChannelHealth,
    database_error: str | None,
    draining: bool,
    problem: str,
) -> None:
    base, routes, _ = served
    state.health["slack.ops"] = health
    state.database_error = database_error
    routes.draining = draining
    code, body = await fetch(f"{base}/readyz")
    assert code == 503
    assert json.loads(body)["problems"] == [problem]
    assert (await fetch(f"{base}/healthz"))[0] == 200


async def test_readiness_turns_ready_once_the_channel_connects(state: FakeDaemonState) -> None:
    state.health["telegram.main"] = ChannelHealth(state=HealthState.STARTING)
    assert not (await assess_readiness(state)).ready
    state.health["telegram.main"] = CONNECTED
    assert (await assess_readiness(state)).ready


async def test_metrics_page_parses_and_reads_live_state(
    served: tuple[str, HealthRoutes, Metrics], state: FakeDaemonState
) -> None:
    base, _, metrics = served
    state.load = (2, 5)
    state.health["slack.ops"] = ChannelHealth(state=HealthState.RECONNECTING)
    metrics.turn_finished("completed")
    metrics.approval_decided("approved", 12.5)
    metrics.provider_call("default", 0.4, "ProviderTimeout")
    code, text = await fetch(f"{base}/metrics")
    assert code == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("hatchway_turns_running", ())] == 2
    assert samples[("hatchway_queue_depth", ())] == 5
    assert samples[("hatchway_channel_up", (("channel", "slack.ops"),))] == 0
    assert samples[("hatchway_channel_up", (("channel", "telegram.main"),))] == 1
    state_key = ("hatchway_channel_state", (("channel", "slack.ops"), ("state", "reconnecting")))
    assert samples[state_key] == 1
    assert samples[("hatchway_inbox_entries", (("status", "done"),))] == 3
    assert samples[("hatchway_turns_total", (("status", "completed"),))] == 1
    assert samples[("hatchway_approvals_total", (("decision", "approved"),))] == 1
    assert samples[("hatchway_approval_latency_seconds_sum", (("decision", "approved"),))] == 12.5
    error_key = (
        "hatchway_provider_errors_total",
        (("error", "ProviderTimeout"), ("provider", "default")),
    )
    assert samples[error_key] == 1


def test_each_metrics_object_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.turn_finished("completed")
    assert b'hatchway_turns_total{status="completed"} 1.0' in first.render()
    assert b"hatchway_turns_total{" not in second.render()
