"""``[replicas]``: defaults, and a TTL too short for a missed heartbeat refused by name."""

from __future__ import annotations

import pytest

from bot.config import parse_settings
from bot.errors import ConfigError


def test_defaults_leave_room_for_a_missed_heartbeat_and_the_skew() -> None:
    replicas = parse_settings({}, environ={}).replicas
    assert (replicas.heartbeat_s, replicas.lease_ttl_s, replicas.max_clock_skew_s) == (1, 4, 1)
    assert replicas.fence_s == 3


def test_a_ttl_shorter_than_two_heartbeats_and_the_skew_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_settings({"replicas": {"heartbeat_s": 2, "lease_ttl_s": 4.5}}, environ={})
    message = str(raised.value)
    assert "replicas" in message
    assert "lease_ttl_s = 4.5 is too short" in message
    assert "2 × heartbeat_s + max_clock_skew_s = 5" in message


def test_short_settings_for_quick_takeovers_are_accepted() -> None:
    replicas = parse_settings(
        {"replicas": {"heartbeat_s": 0.1, "lease_ttl_s": 0.5, "max_clock_skew_s": 0.2}},
        environ={},
    ).replicas
    assert replicas.fence_s == pytest.approx(0.3)
