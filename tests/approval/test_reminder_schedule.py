"""Which reminder schedule applies to a call: ``[approval]``, its ``tools`` entries, the
channel's ``approval`` table, the agent's and the agent's ``tools`` entries, the narrowest
setting each key winning (bot.approval.policy)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.policy import ApprovalPolicy
from bot.config import parse_settings
from bot.errors import ConfigError
from tests.approval.conftest import APPROVER, SLACK


def _policy(
    approval: dict[str, Any],
    *,
    channel: dict[str, Any] | None = None,
    agent: dict[str, Any] | None = None,
) -> ApprovalPolicy:
    team: dict[str, Any] = {"allowed_users": ["*"], "approvers": [APPROVER]}
    if channel is not None:
        team["approval"] = channel
    data: dict[str, Any] = {"approval": approval, "channels": {"slack": {"team": team}}}
    if agent is not None:
        data["agents"] = {"ops": {"approval": agent}}
    return ApprovalPolicy(parse_settings(data, environ={}, require_provider=False))


BASE = {
    "remind_after_s": 600,
    "escalate_after_s": 1800,
    "escalate_to": ["U_LEAD"],
    "tools": {
        "shell": {"remind_after_s": 60, "remind_max": 5},
        "mcp_github_*": {"escalate_to": ["U_GH"]},
        "mcp_*": {"remind_max": 0},
    },
}


@pytest.mark.parametrize(
    ("agent", "tool", "expected"),
    [
        # [approval] alone
        ("default", "http_fetch", (600, 3, 1800, ("U_LEAD",))),
        # the tool's entry beats [approval]
        ("default", "shell", (60, 5, 1800, ("U_LEAD",))),
        # a pattern entry; the first pattern in file order that matches
        ("default", "mcp_github_issue", (600, 3, 1800, ("U_GH",))),
        ("default", "mcp_jira_issue", (600, 0, 1800, ("U_LEAD",))),
        # the agent's table beats [approval]'s tool entry; its own tool entry beats both
        ("ops", "http_fetch", (900, 3, 1800, ("U_OPS",))),
        ("ops", "shell", (30, 5, 1800, ("U_OPS",))),
    ],
)
def test_the_narrowest_table_sets_each_key(
    agent: str, tool: str, expected: tuple[float, int, float, tuple[str, ...]]
) -> None:
    policy = _policy(
        BASE,
        agent={
            "remind_after_s": 900,
            "escalate_to": ["U_OPS"],
            "tools": {"shell": {"remind_after_s": 30}},
        },
    ).for_channel(SLACK, agent, tool)
    got = (policy.remind_after_s, policy.remind_max, policy.escalate_after_s, policy.escalate_to)
    assert got == expected


def test_the_channel_table_sits_between_approval_and_the_agent() -> None:
    policy = _policy(
        BASE, channel={"remind_after_s": 120, "escalate_to": ["U_CHAN"]}, agent={"remind_max": 1}
    )
    here = policy.for_channel(SLACK, "ops", "shell")
    # the channel's table beats [approval]'s entry for shell; the agent's beats the channel
    assert (here.remind_after_s, here.remind_max, here.escalate_to) == (120, 1, ("U_CHAN",))
    assert policy.schedules_reminders()


def test_without_a_tool_the_tables_tools_entries_do_not_apply() -> None:
    policy = _policy(BASE).for_channel(SLACK, "default")
    assert (policy.remind_after_s, policy.remind_max) == (600, 3)


@pytest.mark.parametrize(
    ("approval", "channel", "agent"),
    [
        ({"tools": {"shell": {"remind_after_s": 60}}}, None, None),
        ({}, {"escalate_after_s": 60, "escalate_to": ["U_LEAD"]}, None),
        ({}, None, {"tools": {"shell": {"remind_after_s": 60}}}),
        ({}, None, {"remind_after_s": 60}),
    ],
)
def test_the_sweep_reads_rows_when_any_table_schedules(
    approval: dict[str, Any], channel: dict[str, Any] | None, agent: dict[str, Any] | None
) -> None:
    assert _policy(approval, channel=channel, agent=agent).schedules_reminders()
    assert not _policy({}).schedules_reminders()


@pytest.mark.parametrize(
    "entry",
    [{"remind_after_s": 0}, {"remind_max": -1}, {"remind_max": 51}, {"timeout": 5}],
)
def test_a_bad_tool_entry_is_refused_with_its_path(entry: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"approval\.tools\.shell"):
        _policy({"tools": {"shell": entry}})
