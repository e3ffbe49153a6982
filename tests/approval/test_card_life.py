"""A card's life per tool and per agent (``timeout_s`` in ``[approval.tools.TOOL]`` and
``[agents.NAME.approval]``, the narrowest table winning as for the reminder keys): the
request expires then, the card says that window, and ``wait_in_turn_s`` never exceeds it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from bot.approval.policy import ApprovalPolicy
from bot.config import parse_settings
from bot.errors import ConfigError
from bot.store import Store
from tests.approval.conftest import (
    APPROVER,
    SLACK,
    asking,
    make_envelope,
    make_request,
    service_for,
)
from tests.fakes.channel import FakeChannel


def _settings(approval: dict[str, Any], agent: dict[str, Any] | None = None) -> Any:
    team: dict[str, Any] = {"allowed_users": ["*"], "approvers": [APPROVER]}
    data: dict[str, Any] = {"approval": approval, "channels": {"slack": {"team": team}}}
    if agent is not None:
        data["agents"] = {"ops": {"approval": agent}}
    return parse_settings(data, environ={}, require_provider=False)


BASE = {"timeout_s": 86_400, "wait_in_turn_s": 300, "tools": {"shell": {"timeout_s": 3600}}}
OPS = {"timeout_s": 7200, "tools": {"shell": {"timeout_s": 120}, "deploy": {"timeout_s": 600}}}


@pytest.mark.parametrize(
    ("agent", "tool", "life", "wait"),
    [
        ("default", "http_fetch", 86_400, 300),
        # [approval.tools.shell]
        ("default", "shell", 3600, 300),
        # the agent's table beats [approval]'s tool entry; the agent's tool entry beats both,
        # and wait_in_turn_s is cut to the card's life
        ("ops", "http_fetch", 7200, 300),
        ("ops", "shell", 120, 120),
        ("ops", "deploy", 600, 300),
    ],
)
def test_the_narrowest_table_sets_the_cards_life(
    agent: str, tool: str, life: float, wait: float
) -> None:
    policy = ApprovalPolicy(_settings(BASE, OPS)).for_channel(SLACK, agent, tool)
    assert (policy.timeout_s, policy.wait_in_turn_s) == (life, wait)


@pytest.mark.parametrize("entry", [{"timeout_s": 0}, {"timeout_s": -5}, {"timeout_s": "a"}])
def test_a_bad_timeout_is_refused_with_its_path(entry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"approval\.tools\.shell"):
        _settings({"tools": {"shell": entry}})
    with pytest.raises(ConfigError, match=r"agents\.ops\.approval"):
        _settings({}, {**entry})


async def test_a_card_lives_and_says_its_tools_and_agents_window(
    store: Store, channel: FakeChannel
) -> None:
    service = service_for(_settings(BASE, OPS), store, channel)
    # [approval.tools.shell]: an hour
    async with asking(service, store, channel) as (posted, task):
        record = await store.approvals.get(posted.card.approval_id)
        assert record is not None
        assert record.expires_at - record.created_at == 3600
        assert "No answer within 60 min means no." in posted.card.render_text()
        task.cancel()
    # the agent's entry for deploy: ten minutes
    envelope = dataclasses.replace(make_envelope(), agent="ops")
    request = make_request("deploy", {"version": "2"}, envelope=envelope, call_id="call-2")
    async with asking(service, store, channel, request) as (posted, task):
        record = await store.approvals.get(posted.card.approval_id)
        assert record is not None
        assert record.expires_at - record.created_at == 600
        assert "No answer within 10 min means no." in posted.card.render_text()
        task.cancel()
