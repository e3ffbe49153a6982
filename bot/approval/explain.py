"""Why a call would run, be asked about, or be refused: the policy's verdict with its rule.

:func:`explain` evaluates an :class:`~bot.approval.gate.ApprovalRequest` with the very
:meth:`ApprovalPolicy.evaluate <bot.approval.policy.ApprovalPolicy.evaluate>` the pipeline's
gate calls (grants looked up the same way, in the same store), then says which entry of which
table decided (``deny`` pattern ``shell`` in ``channels.slack.team.approval``), who could
answer a card and whether each can see the conversation (:func:`~bot.approval.reach.
approver_reach`, the runtime's check; offline a group's answer is unknown), and the lines the
card would show (:func:`~bot.approval.summary.describe`). Nothing here decides anything the
policy does not: the verdict *is* the policy's result.

Used by ``hatchway policy explain``, the console's *Explain* page and ``/why`` through
:mod:`bot.tools.policy_question` (which builds the request from the tool catalog as the
pipeline does), and by ``hatchway doctor``'s warnings (:mod:`bot.approval.findings`:
:attr:`Explanation.refused_at_once` for imagined requests), so none of them can drift from
the runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.approval.gate import ApprovalRequest, Assessment, PolicyResult
from bot.approval.grants import GrantBook, size_of
from bot.approval.policy import (
    FROM_AGENT,
    FROM_CHANNEL,
    ApprovalPolicy,
    EffectivePolicy,
    Layer,
    first_match,
)
from bot.approval.quorum import quorum_for, quorum_possible
from bot.approval.reach import approver_reach, approvers_here, eligible_approvers
from bot.approval.reasons import PolicyReason, RuntimeReason
from bot.approval.summary import describe
from bot.channel import Channel
from bot.envelope import IngressEnvelope
from bot.store import Store
from bot.store.grants import GrantRecord

#: How each assessment reads to an operator.
VERDICT_WORDS = {Assessment.ALLOW: "run", Assessment.ASK: "ask", Assessment.DENY: "refuse"}

#: The policy key each rule reads (the grant and the tool's own flag read none).
_RULE_KEY = {
    PolicyReason.DENY_LIST: "deny",
    PolicyReason.READONLY_LEVEL: "level",
    PolicyReason.FULL_LEVEL: "level",
    PolicyReason.ALWAYS_ASK: "always_ask",
    PolicyReason.AUTO_APPROVE: "auto_approve",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ApproverReach:
    """One listed approver and whether a card in the conversation reaches them."""

    approver: str
    sees: str  # "yes", "no (…)", "unknown (offline)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """The policy's verdict on one call, and why."""

    result: PolicyResult
    rule: str  # the rule in words, with the entry and the table that set it
    level: str  # the level in force and its table
    approvers: tuple[ApproverReach, ...]
    not_counted: tuple[str, ...]  # listed approvers whose click would not count, and why
    approver_roles: tuple[str, ...]
    card: tuple[str, ...]  # the lines the card would show (masked, escaped, cut)
    card_cut: bool
    asked: str  # for an ask: how a person would be asked, or why nobody could be
    #: For an ask nobody could answer: the reason the runtime refuses it at once with
    #: (``hatchway doctor``'s warnings are these), None when a person would be asked.
    refused_at_once: RuntimeReason | None = None

    @property
    def verdict(self) -> str:
        return VERDICT_WORDS[self.result.assessment]

    @property
    def decision(self) -> str:
        """The verdict as the command prints it: ``quorum N`` for an ask that needs N
        distinct approvers, else :attr:`verdict`."""
        if self.result.reason is PolicyReason.QUORUM:
            return f"quorum {self.result.quorum}"
        return self.verdict


def table_name(layer: Layer, envelope: IngressEnvelope) -> str:
    """The configuration table ``layer`` means for ``envelope``."""
    if layer == FROM_AGENT:
        return f"agents.{envelope.agent}.approval"
    if layer == FROM_CHANNEL:
        return f"channels.{envelope.channel}.approval"
    return "approval"


def _rule(
    result: PolicyResult,
    request: ApprovalRequest,
    policy: EffectivePolicy,
    grant: GrantRecord | None,
) -> str:
    envelope = request.turn.envelope
    key = _RULE_KEY.get(result.reason)
    if key == "level":
        where = table_name(policy.source("level"), envelope)
        return f'level "{policy.level}" ({where}.level)'
    if key is not None:
        patterns: tuple[str, ...] = getattr(policy, key)
        entry = first_match(request.tool, patterns)
        where = table_name(policy.source(key), envelope)
        return f'{result.reason.value}: entry "{entry}" in {where}.{key}'
    if result.reason is PolicyReason.GRANT and grant is not None:
        place = grant.scope_key or "everywhere"
        expires = "never" if grant.expires_at is None else f"at {grant.expires_at:.0f} (epoch)"
        return (
            f"grant #{grant.id} ({grant.scope} {place}, by {grant.granted_by}, expires {expires},"
            f" size: {size_of(grant)})"
        )
    if result.reason is PolicyReason.QUORUM:
        need = quorum_for(policy.quorum, request.tool, request.arguments)
        where = table_name(policy.source("quorum"), envelope)
        if need is not None:
            return (
                f"quorum {need.approvals}: rule {need.index + 1} ({need.entry}) in "
                f"{where}.quorum.rules"
            )
    if result.reason is PolicyReason.READ_ONLY_TOOL:
        return "read-only: the tool needs no approval for this call"
    return "side-effecting tool: no deny, always_ask, grant or auto_approve entry matched"


async def _asked(
    channel: Channel | None, envelope: IngressEnvelope, policy: EffectivePolicy
) -> tuple[str, RuntimeReason | None]:
    """How the runtime would ask (:meth:`ApprovalService._handler
    <bot.approval.service.ApprovalService>`'s order, then the backchannel's copies), and the
    reason it would refuse at once when nobody could be asked."""
    if envelope.background:
        why = RuntimeReason.BACKGROUND
        return f"nobody: refused at once ({why.value}: scheduled runs never ask)", why
    if envelope.capabilities.terminal_prompt:
        return "at the terminal (the console asks whoever is there)", None
    if not envelope.capabilities.approval_backchannel:
        why = RuntimeReason.NO_BACKCHANNEL
        return f"nobody: refused at once ({why.value})", why
    if not policy.has_approvers:
        return f"nobody: refused at once ({RuntimeReason.NO_APPROVER.value})", (
            RuntimeReason.NO_APPROVER
        )
    # the backchannel's copies: each eligible approver's DM, but not the requester's own DM
    dm_to = [
        a
        for a in eligible_approvers(policy, envelope.sender.id)
        if envelope.is_group or a != envelope.sender.id
    ]
    if await approvers_here(channel, envelope, policy):
        copies = ", and a copy in each approver's direct messages"
        return "a card in the conversation" + (copies if policy.dm_approvers else ""), None
    if policy.dm_approvers and dm_to:
        return "a copy in each approver's direct messages (nobody here can answer)", None
    return f"nobody: refused at once ({RuntimeReason.NOBODY_REACHABLE.value})", (
        RuntimeReason.NOBODY_REACHABLE
    )


async def _reach(
    channel: Channel | None, envelope: IngressEnvelope, policy: EffectivePolicy
) -> tuple[ApproverReach, ...]:
    # no running channel (offline): a group's membership is the platform's to say
    reach = await approver_reach(channel, envelope, policy)
    words = {True: "yes", False: "no (a direct message is seen by its requester alone)"}
    return tuple(
        ApproverReach(approver=who, sees=words[seen] if seen is not None else "unknown (offline)")
        for who, seen in reach
    )


async def explain(
    policy: ApprovalPolicy,
    store: Store | None,
    request: ApprovalRequest,
    *,
    clock: Callable[[], float],
    channel: Channel | None = None,
) -> Explanation:
    """The policy's verdict on ``request`` and why (see the module docstring). ``channel``
    is the running channel of the request's conversation, when there is one (the console,
    a chat command): its ``members`` then say who can see a group, as at run time. Without
    ``store`` no grant is looked up (a question about the configuration alone)."""
    envelope = request.turn.envelope
    grants = GrantBook(store, clock) if store is not None else None
    found: list[GrantRecord | None] = []

    async def grant() -> GrantRecord | None:
        # without a store (``hatchway doctor``'s findings) no grant is considered
        found.append(
            await grants.find(request.tool, envelope, request.fingerprint)
            if grants is not None
            else None
        )
        return found[-1]

    result = await policy.evaluate(request, grant)
    effective = policy.for_channel(envelope.channel, envelope.agent)
    requester = envelope.sender.id
    needs_quorum = result.reason is PolicyReason.QUORUM
    not_counted = tuple(
        f"{who} (the requester; "
        + ("never counts toward a quorum)" if needs_quorum else "self_approval is off)")
        for who in effective.approvers
        if who == requester and (needs_quorum or not effective.self_approval)
    )
    view = describe(
        request.arguments, notes=request.notes, diff=request.diff, covered=request.covered
    )
    level_from = table_name(effective.source("level"), envelope)
    asked, refused = await _asked(channel, envelope, effective)
    if needs_quorum and not quorum_possible(
        result.quorum,
        requester=requester,
        approvers=effective.approvers,
        escalate_to=effective.escalate_to,
        roles=effective.approver_roles,
        terminal=envelope.capabilities.terminal_prompt,
    ):
        why = RuntimeReason.QUORUM_UNREACHABLE
        asked, refused = f"nobody: refused at once ({why.value})", why
    return Explanation(
        result=result,
        rule=_rule(result, request, effective, found[-1] if found else None),
        level=f"{effective.level} ({level_from}.level)",
        approvers=await _reach(channel, envelope, effective),
        not_counted=not_counted,
        approver_roles=effective.approver_roles,
        card=view.lines,
        card_cut=view.cut,
        asked=asked,
        refused_at_once=refused if result.assessment is Assessment.ASK else None,
    )
