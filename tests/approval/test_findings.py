"""Configurations where an approval can never succeed are found before anyone asks."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.findings import approval_findings
from bot.commands.doctor.report import CheckResult
from bot.config import parse_settings
from bot.errors import ConfigError


def findings(channel: dict[str, Any], approval: dict[str, Any] | None = None) -> list[str]:
    data: dict[str, Any] = {
        "approval": approval or {},
        "channels": {"telegram": {"main": {"token_env": "T", **channel}}},
    }
    settings = parse_settings(data, environ={}, require_provider=False)
    return [f.problem for f in approval_findings(settings)]


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
def test_a_configuration_that_can_never_approve_is_found(
    channel: dict[str, Any], approval: dict[str, Any], expected: str
) -> None:
    (problem,) = findings(channel, approval)
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
def test_a_configuration_that_can_approve_is_quiet(
    channel: dict[str, Any], approval: dict[str, Any]
) -> None:
    assert findings(channel, approval) == []


def test_slack_rejects_approver_roles_at_load() -> None:
    data = {"channels": {"slack": {"team": {"approver_roles": ["ops"]}}}}
    with pytest.raises(ConfigError, match="approver_roles is not supported on Slack"):
        parse_settings(data, environ={}, require_provider=False)


def test_a_warning_line_shows_its_fix_and_passes() -> None:
    line = CheckResult(name="approvals telegram.main", ok=True, warning=True, detail="x", fix="y")
    assert line.render() == "⚠ approvals telegram.main: x\n    fix: y"


def test_approval_keys_the_console_ignores_are_named() -> None:
    data = {"channels": {"console": {"main": {"approvers": ["me"]}}}}
    settings = parse_settings(data, environ={}, require_provider=False)
    (finding,) = approval_findings(settings)
    assert finding.channel == "console.main"
    assert finding.problem.startswith("approvers ignored")
