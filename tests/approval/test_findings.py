"""Configurations where an approval can never succeed are found before anyone asks."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.findings import approval_findings
from bot.commands.doctor.report import CheckResult
from bot.config import parse_settings
from bot.errors import ConfigError


async def findings(
    channel: dict[str, Any],
    approval: dict[str, Any] | None = None,
    agents: dict[str, Any] | None = None,
) -> list[str]:
    data: dict[str, Any] = {
        "approval": approval or {},
        "channels": {"telegram": {"main": {"token_env": "T", **channel}}},
        **({"agents": agents} if agents else {}),
    }
    settings = parse_settings(data, environ={}, require_provider=False)
    return [f.problem for f in await approval_findings(settings)]


@pytest.mark.parametrize(
    ("channel", "approval", "expected"),
    [
        pytest.param({"allowed_users": ["1"]}, {}, "no approvers", id="no approvers"),
        pytest.param(
            {"allowed_users": ["1"], "approvers": ["1"]},
            {},
            "the only users are the only approvers",
            id="README without self_approval",
        ),
        pytest.param(
            {"allowed_users": ["1", "2"], "approvers": ["1"]},
            {},
            "direct messages can never be approved",
            id="DMs without dm_approvers",
        ),
    ],
)
async def test_a_configuration_that_can_never_approve_is_found(
    channel: dict[str, Any], approval: dict[str, Any], expected: str
) -> None:
    (problem,) = await findings(channel, approval)
    assert expected in problem


@pytest.mark.parametrize(
    ("channel", "approval"),
    [
        pytest.param(
            {"allowed_users": ["1"], "approvers": ["1"], "approval": {"self_approval": True}},
            {},
            id="README with self_approval",
        ),
        pytest.param(
            {"allowed_users": ["1", "2"], "approvers": ["1"]},
            {"dm_approvers": True},
            id="DM copies to approvers",
        ),
        pytest.param(
            {"allowed_users": ["1", "2"], "approvers": ["1"], "dm_policy": "disabled"},
            {},
            id="groups only",
        ),
        pytest.param({"allowed_users": ["1"]}, {"level": "full"}, id="nothing is asked"),
    ],
)
async def test_a_configuration_that_can_approve_is_quiet(
    channel: dict[str, Any], approval: dict[str, Any]
) -> None:
    assert await findings(channel, approval) == []


def test_slack_rejects_approver_roles_at_load() -> None:
    data = {"channels": {"slack": {"team": {"approver_roles": ["ops"]}}}}
    with pytest.raises(ConfigError, match="approver_roles is not supported on Slack"):
        parse_settings(data, environ={}, require_provider=False)


def test_a_warning_line_shows_its_fix_and_passes() -> None:
    line = CheckResult(name="approvals telegram.main", ok=True, warning=True, detail="x", fix="y")
    assert line.render() == "⚠ approvals telegram.main: x\n    fix: y"


async def test_approval_keys_the_console_ignores_are_named() -> None:
    data = {"channels": {"console": {"main": {"approvers": ["me"]}}}}
    settings = parse_settings(data, environ={}, require_provider=False)
    (finding,) = await approval_findings(settings)
    assert finding.channel == "console.main"
    assert finding.problem.startswith("approvers ignored")


# Where the checks written beside the policy (before they asked the explain engine) and the
# runtime disagreed: the channel's table alone was read, never the agent's that answers there;
# and the approvers' DM copies were assumed to reach someone, but the only user is the only
# listed approver, who gets no copy of their own DM request (role holders count in a DM only
# with self_approval).
@pytest.mark.parametrize(
    ("channel", "approval", "agents", "expected"),
    [
        pytest.param(
            {"allowed_users": ["1"], "approval": {"level": "full"}, "agent": "ops"},
            {},
            {"ops": {"approval": {"level": "supervised"}}},
            "no approvers: every call",
            id="the agent asks where the channel does not",
        ),
        pytest.param(
            {"allowed_users": ["1"], "approvers": ["1"], "approver_roles": ["ops"]},
            {"dm_approvers": True},
            None,
            "requests made in direct messages can never be approved",
            id="a DM copy to the requester alone",
        ),
    ],
)
async def test_the_findings_follow_the_runtime_where_the_old_checks_did_not(
    channel: dict[str, Any],
    approval: dict[str, Any],
    agents: dict[str, Any] | None,
    expected: str,
) -> None:
    (problem,) = await findings(channel, approval, agents)
    assert expected in problem


async def test_an_agent_that_never_asks_silences_the_channel() -> None:
    # the channel asks and has nobody to ask, but the only agent there runs everything
    quiet = await findings(
        {"allowed_users": ["1"], "agent": "ops"}, {}, {"ops": {"approval": {"level": "full"}}}
    )
    assert quiet == []


@pytest.mark.parametrize(
    ("kind", "channel", "agents", "expected"),
    [
        pytest.param(
            "telegram",
            {"approval": {"escalate_after_s": 60}},
            None,
            ["escalate_after_s is set but escalate_to names nobody"],
            id="channel escalates to nobody",
        ),
        pytest.param(
            "telegram",
            {},
            {"ops": {"approval": {"tools": {"shell": {"escalate_after_s": 60}}}}},
            ["escalate_after_s is set for shell but escalate_to names nobody"],
            id="an agent's tool entry escalates to nobody",
        ),
        pytest.param(
            "slack",
            {"approval": {"escalate_after_s": 60, "escalate_to_roles": ["sre"]}},
            None,
            ["escalate_to_roles never match on Slack (a click carries no roles)"],
            id="roles on slack",
        ),
        pytest.param(
            "telegram",
            {"approval": {"escalate_after_s": 60, "escalate_to_roles": ["administrator"]}},
            None,
            [],
            id="roles on telegram",
        ),
    ],
)
async def test_an_escalation_that_can_never_reach_anyone_is_found(
    kind: str, channel: dict[str, Any], agents: dict[str, Any] | None, expected: list[str]
) -> None:
    table = {"allowed_users": ["1", "2"], "approvers": ["1"], **channel}
    if kind == "telegram":
        table["token_env"] = "T"
    else:
        table |= {"bot_token_env": "B", "app_token_env": "A"}
    data: dict[str, Any] = {"channels": {kind: {"main": table}}}
    if agents:
        data["agents"] = {
            name: {**agent, "routes": [{"channel": f"{kind}.main"}]}
            for name, agent in agents.items()
        }
    settings = parse_settings(data, environ={}, require_provider=False)
    found = [f.problem for f in await approval_findings(settings)]
    assert [p for p in found if "escalat" in p] == expected
