"""Grants chosen at click time: which sizes of yes a card offers, and what a pick grants.

``approval.grant_choices`` (or a channel's or an agent's ``approval`` table) lists the
choices, e.g. "for 1 h", "for this conversation", "for this exact command". For one call a
card offers only those the policy allows for its tool (:func:`offered`):

- none for a tool in ``always_ask`` or ``deny``, or outside the ``supervised`` level (a
  grant could never let it run);
- a choice only when the tool matches its ``tools``, its scope is no wider than
  ``grant_scope`` and its ``ttl_s`` no longer than ``grant_ttl_s`` (a choice without
  ``ttl_s`` lasts as long as ``grant_ttl_s`` allows);
- an exact-arguments choice only for a call whose approval binds nothing but its arguments
  (a file change's approval binds the file's content too, which a standing grant cannot).

What was offered is kept on the approval row when it is asked (scope, lifetime, exactness
included). A pick grants only a key that row offered (:func:`picked`), re-bounded by the
policy in force at the click (``always_ask``, ``deny``, ``grant_scope``, ``grant_ttl_s``):
a tampered, unknown or since-forbidden key grants nothing, and never more than was shown.
"""

from __future__ import annotations

from bot.approval.gate import FINGERPRINT_V2, ApprovalRequest
from bot.approval.policy import EffectivePolicy, matches
from bot.approval.web_answer import scopes_up_to
from bot.channel_config import GrantChoice
from bot.store.grants import OfferedGrant


def grants_possible(policy: EffectivePolicy, tool: str) -> bool:
    """Whether a grant could ever let ``tool`` run under ``policy``."""
    return (
        policy.level == "supervised"
        and not matches(tool, policy.always_ask)
        and not matches(tool, policy.deny)
    )


def _within(policy: EffectivePolicy, scope: str, ttl_s: float | None) -> bool:
    """Whether a grant of ``scope`` lasting ``ttl_s`` is no wider than ``policy`` allows."""
    limit = policy.grant_ttl_s
    longest_ok = limit is None or (ttl_s is not None and ttl_s <= limit)
    return scope in scopes_up_to(policy.grant_scope) and longest_ok


def _offer(choice: GrantChoice, policy: EffectivePolicy) -> OfferedGrant:
    ttl = choice.ttl_s if choice.ttl_s is not None else policy.grant_ttl_s
    return OfferedGrant(
        key=choice.key, label=choice.label, scope=choice.scope, ttl_s=ttl, exact=choice.exact
    )


def offered(policy: EffectivePolicy, request: ApprovalRequest) -> tuple[OfferedGrant, ...]:
    """The choices a card for ``request`` offers under ``policy`` (the module docstring)."""
    if not grants_possible(policy, request.tool):
        return ()
    binds_more = request.fingerprint.startswith(FINGERPRINT_V2)
    choices = (
        _offer(c, policy) for c in policy.grant_choices if matches(request.tool, tuple(c.tools))
    )
    return tuple(
        c for c in choices if _within(policy, c.scope, c.ttl_s) and not (c.exact and binds_more)
    )


def picked(
    policy: EffectivePolicy, *, tool: str, shown: tuple[OfferedGrant, ...], key: str
) -> OfferedGrant | None:
    """The choice ``key`` grants: one the card showed (``shown``, the row's), still within
    ``policy``; None otherwise (nothing is granted)."""
    choice = next((c for c in shown if c.key == key), None)
    if choice is None or not grants_possible(policy, tool):
        return None
    return choice if _within(policy, choice.scope, choice.ttl_s) else None
