"""An answer from the web console: a decision on an approval row, with what the page showed.

The console (:mod:`bot.webconsole`) shows every argument in full, so its answers count as
coming from a full view. Beyond a card's click it carries the call's fingerprint as the page
showed it (a decision applies to exactly that call: another fingerprint decides nothing).
Always and the grant choices are the card's (:mod:`bot.approval.grant_choices`): a choice
travels by its key and the card flow grants only one the request offered, within the policy,
as for a pick on a chat card. Its rows record ``web`` as the route
(:attr:`~bot.approval.reasons.AnswerRoute.WEB`): the audit row's ``reason``, which says how
a person's answer came.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.channel import ApprovalChoice
from bot.channel_config import GrantScope
from bot.envelope import ChannelRef

#: Grant scopes from the narrowest to the widest.
SCOPES: tuple[GrantScope, ...] = ("conversation", "channel", "global")


def scopes_up_to(widest: GrantScope) -> tuple[GrantScope, ...]:
    """The scopes an approver may choose when ``widest`` is the alias's ``grant_scope``."""
    return SCOPES[: SCOPES.index(widest) + 1]


@dataclass(frozen=True, slots=True, kw_only=True)
class WebAnswer:
    """An approver's decision, sent from the console by ``user_id`` (a user id of the
    platform of ``channel``, as a card click carries it)."""

    channel: ChannelRef
    approval_id: str
    fingerprint: str
    choice: ApprovalChoice
    user_id: str
    #: Deny with a reply: the text the model gets instead of the tool's result.
    reply: str | None = None
    #: A grant choice picked ("approve with a grant"): its key, as a card's payload carries
    #: it (checked against what the request offered; never trusted). Empty: none.
    grant_choice: str = ""
