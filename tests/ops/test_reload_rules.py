"""Which configuration changes a SIGHUP applies, and the STATUS line."""

from __future__ import annotations

from typing import Any

import pytest

from bot.channel import ChannelHealth, HealthState
from bot.config import parse_settings
from bot.ops.daemon import restart_only_changes, status_line

BASE: dict[str, Any] = {
    "providers": {"default": {"kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}},
    "channels": {"telegram": {"main": {"allowed_users": ["1"], "token_env": "T"}}},
}


def settings(**changes: Any) -> Any:
    data: dict[str, Any] = {**BASE, **changes}
    return parse_settings(data, environ={})


@pytest.mark.parametrize(
    ("changes", "needs_restart"),
    [
        ({"channels": {"telegram": {"main": {"allowed_users": ["1", "2"], "token_env": "T"}}}}, []),
        ({"approval": {"level": "full"}}, []),
        ({"tools": {"shell": {"enabled": False}}}, []),
        (
            {"channels": {"telegram": {"main": {"allowed_users": ["1"], "token_env": "OTHER"}}}},
            ["channels.telegram.main"],
        ),
        ({"channels": {}}, ["channels.telegram.main"]),
        (  # read by the adapter when it starts
            {
                "channels": {
                    "telegram": {
                        "main": {
                            "allowed_users": ["1"],
                            "token_env": "T",
                            "delivery": {"long_answer": "file"},
                        }
                    }
                }
            },
            ["channels.telegram.main"],
        ),
        ({"server": {"enabled": True}}, ["server"]),
        ({"telemetry": {"enabled": True, "sample_ratio": 0.5}}, ["telemetry"]),
        ({"agent": {"max_concurrent_turns": 2}}, ["agent.max_concurrent_turns"]),
        ({"schedules": {"missed_run_policy": "skip", "tick_s": 5}}, []),  # applied on reload
        ({"schedules": {"enabled": False}}, ["schedules.enabled"]),
        ({"mcp": {"deferred_threshold": 3}}, []),  # applied on reload
        (
            {"mcp": {"servers": {"x": {"command": ["true"]}}}},
            ["mcp.servers"],
        ),
        (
            {
                "providers": {
                    "default": {"kind": "openai", "base_url": "http://127.0.0.1:2/v1", "model": "m"}
                }
            },
            ["providers"],
        ),
    ],
)
def test_restart_only_changes(changes: dict[str, Any], needs_restart: list[str]) -> None:
    assert restart_only_changes(settings(), settings(**changes)) == needs_restart


@pytest.mark.parametrize(
    ("health", "line"),
    [
        ({"console.main": HealthState.CONNECTED}, "ready: 1 channel"),
        ({"a.x": HealthState.CONNECTED, "b.y": HealthState.CONNECTED}, "ready: 2 channels"),
        (
            {"a.x": HealthState.CONNECTED, "b.y": HealthState.RECONNECTING},
            "degraded: 1/2 channels connected; b.y reconnecting (why)",
        ),
    ],
)
def test_status_line(health: dict[str, HealthState], line: str) -> None:
    detail = {HealthState.RECONNECTING: "why"}
    states = {n: ChannelHealth(state=s, detail=detail.get(s, "")) for n, s in health.items()}
    assert status_line(states) == line
