"""Configurations under which an approval can never succeed, found before anyone asks.

``hatchway doctor`` prints each finding as a warning and the daemon logs each one at start-up
(``approval_config_warning``), so a team does not learn from a refused call that its
approvers cannot answer. Per channel alias that asks (level ``supervised``):

* nobody can approve: no ``approvers`` and no ``approver_roles``;
* the only people who may talk are the only approvers and ``self_approval`` is off (README's
  one-person setup without it): no request of theirs can be approved by anyone;
* direct messages are on, ``dm_approvers`` and ``self_approval`` are off: a DM's card is seen
  by its requester alone, who may not approve it.

The console channel asks whoever is at the terminal: its findings are the approval keys it
ignores (``approvers``, ``approver_roles``, ``reactions_for_approval``). Slack's
``approver_roles`` is refused when the config is loaded. Whether a particular group has an
approver in it is decided per message (:mod:`bot.approval.reach`), not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.approval.policy import effective_policy
from bot.config import Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    channel: str  # kind.alias
    problem: str
    fix: str


def approval_findings(settings: Settings) -> list[Finding]:
    """Every finding of the enabled channel aliases, in configuration order."""
    found: list[Finding] = []
    for kind, alias, cfg in settings.channels.all():
        if not cfg.enabled:
            continue
        if kind == "console":
            ignored = [
                key
                for key, value in (
                    ("approvers", cfg.approvers),
                    ("approver_roles", cfg.approver_roles),
                    ("reactions_for_approval", cfg.reactions_for_approval),
                )
                if value
            ]
            if ignored:
                found.append(
                    Finding(
                        channel=f"{kind}.{alias}",
                        problem=f"{', '.join(ignored)} ignored: the console asks whoever is "
                        "at the terminal",
                        fix=f"remove {', '.join(ignored)} from channels.{kind}.{alias}",
                    )
                )
            continue
        policy = effective_policy(settings.approval, cfg)
        if policy.level != "supervised":
            continue
        name = f"{kind}.{alias}"
        key = f"channels.{name}"
        if not policy.has_approvers:
            found.append(
                Finding(
                    channel=name,
                    problem="no approvers: every call that needs approval is refused",
                    fix=f"list approvers' user ids in {key}.approvers",
                )
            )
            continue
        users = set(cfg.allowed_users)
        approvers = set(policy.approvers)
        if (
            users
            and "*" not in users
            and not policy.approver_roles
            and not policy.self_approval
            and all(approvers <= {user} for user in users)
        ):
            found.append(
                Finding(
                    channel=name,
                    problem="the only users are the only approvers and self_approval is off: "
                    "no request can ever be approved",
                    fix=f"set {key}.approval.self_approval = true, or add another approver",
                )
            )
            continue
        if cfg.dm_policy != "disabled" and not policy.dm_approvers and not policy.self_approval:
            found.append(
                Finding(
                    channel=name,
                    problem="requests made in direct messages can never be approved (only the "
                    "requester sees a DM's card, and self_approval is off)",
                    fix="set approval.dm_approvers = true (cards go to the approvers' DMs), "
                    f"or {key}.approval.self_approval = true",
                )
            )
    return found
