"""The one interface of the three ways of answering "ask".

:meth:`bot.approval.service.ApprovalService.ask` routes each call the policy will not decide
alone to one :class:`ApprovalHandler`: the terminal prompt
(:class:`~bot.approval.terminal.TerminalHandler`), an approval card
(:class:`~bot.approval.backchannel.CardHandler`) or the runtime's refusal
(:class:`~bot.approval.auto_deny.AutoDeny`). A handler is built for one ask with what the
route found out (the prompter, the channel, the reason nobody can be asked) and is handed
the :class:`AskedCall`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.approval.gate import ApprovalDecision, ApprovalRequest
from bot.approval.policy import EffectivePolicy
from bot.approval.summary import ArgumentView
from bot.store.grants import OfferedGrant


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedCall:
    """One call put to a handler: the request, the policy of its channel alias, its
    arguments as a person sees them, why it needs a person (shown with them), and how many
    distinct people."""

    request: ApprovalRequest
    policy: EffectivePolicy
    view: ArgumentView
    why: str
    #: The grant choices a card offers for this call
    #: (:func:`bot.approval.grant_choices.offered`).
    grant_choices: tuple[OfferedGrant, ...] = ()
    #: How many distinct approvers must say yes (:mod:`bot.approval.quorum`).
    quorum: int = 1


class ApprovalHandler(Protocol):
    """Answers one ask."""

    async def decide(self, asked: AskedCall) -> ApprovalDecision:
        """Get a decision for ``asked`` and audit it. Returns within the policy's
        ``timeout_s`` (a person who does not answer in time is the runtime's ``EXPIRED``);
        a person's or the runtime's "no" is a decision, never an exception.
        ``CancelledError`` propagates, after the handler has closed what it opened."""
        ...
