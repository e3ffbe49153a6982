"""Who may decide an approval: the one place that rule is enforced.

A decider must be listed in the channel alias's ``approvers`` (platform user ids) or hold one
of its ``approver_roles``; the requester may not decide their own call unless
``self_approval`` is on for that alias. Operators acting through the CLI are trusted by
virtue of holding the database, and do not pass through here.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.approval.policy import EffectivePolicy
from bot.channel import ClickVerdict


def is_approver(
    policy: EffectivePolicy,
    user_id: str,
    roles: Sequence[str] = (),
    also: Sequence[str] = (),
    also_roles: Sequence[str] = (),
) -> bool:
    if user_id in policy.approvers or user_id in also:
        return True
    return any(role in policy.approver_roles or role in also_roles for role in roles)


def refusal(
    policy: EffectivePolicy,
    *,
    user_id: str,
    roles: Sequence[str],
    requester: str,
    also: Sequence[str] = (),
    also_roles: Sequence[str] = (),
) -> ClickVerdict | None:
    """Why ``user_id`` may not decide a request by ``requester``; None when they may.
    ``also`` and ``also_roles``: the users and roles the request was escalated to, who may
    decide it too."""
    if not is_approver(policy, user_id, roles, also, also_roles):
        return ClickVerdict.NOT_AUTHORISED
    if user_id == requester and not policy.self_approval:
        return ClickVerdict.SELF_APPROVAL
    return None
