"""Approval cards and decisions built from a persisted approval row.

The row is the truth: the card's state, the decision the waiting turn gets, and the card
after a restart are all derived from it, so every process shows the same outcome.
"""

from __future__ import annotations

from bot.approval import reasons
from bot.approval.gate import ApprovalDecision
from bot.approval.grant_choices import grants_possible
from bot.approval.policy import EffectivePolicy
from bot.approval.quorum import progress_line
from bot.approval.reach import ROLE_ENTRY
from bot.approval.reasons import RuntimeReason
from bot.cards import GrantOption
from bot.channel import ApprovalCard, CardState
from bot.envelope import ChannelRef
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from bot.store.audit import Decision
from bot.visible_text import visible

_CARD_STATE = {
    ApprovalStatus.PENDING: CardState.PENDING,
    ApprovalStatus.APPROVED: CardState.APPROVED,
    ApprovalStatus.ALWAYS: CardState.APPROVED,
    ApprovalStatus.DENIED: CardState.DENIED,
    ApprovalStatus.EDITED: CardState.EDITED,
    ApprovalStatus.EXPIRED: CardState.EXPIRED,
}


def parse_channel_ref(text: str) -> ChannelRef:
    """``kind.alias`` back to a :class:`ChannelRef` (the kind never contains a dot)."""
    kind, _, alias = text.partition(".")
    return ChannelRef(kind=kind, alias=alias)


def escalated_names(users: tuple[str, ...], roles: tuple[str, ...]) -> str:
    """Whom a request was escalated to, as cards, replies and the audit say it:
    ``U0LEAD, role sre``."""
    return ", ".join([*users, *(f"role {r}" for r in roles)])


def quorum_progress(record: ApprovalRecord, policy: EffectivePolicy | None) -> str:
    """The quorum line of ``record``'s card (empty for an ordinary request): the approvals
    counted, by name (else id), and, while it is pending, who else may approve: those the
    request names (``approval.name_approvers`` decided whom, when it was asked) and those it
    was escalated to (people and roles), never the requester or someone already counted.
    ``policy`` is None where the settings are not at hand (the line then names nobody)."""
    if record.quorum <= 1:
        return ""
    voters = tuple((v.voter_name or v.voter) for v in record.votes)
    others: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    if policy is not None and record.status is ApprovalStatus.PENDING:
        counted = {v.voter for v in record.votes} | {record.requester}
        users = [u for u in record.approvers_named if not u.startswith(ROLE_ENTRY)]
        listed = dict.fromkeys((*users, *record.escalated_to))
        others = tuple(a for a in listed if a not in counted)
        named_roles = (
            u.removeprefix(ROLE_ENTRY) for u in record.approvers_named if u.startswith(ROLE_ENTRY)
        )
        roles = tuple(dict.fromkeys((*named_roles, *record.escalated_roles)))
    return progress_line(record.quorum, voters, others, roles)


def offers_grants(record: ApprovalRecord, policy: EffectivePolicy | None) -> bool:
    """Whether Always and the grant choices on ``record``'s card would make a grant: on an
    ordinary request, yes; on one that needs several approvers only the approval that
    completes the quorum makes its grant, and only with ``grants_satisfy`` (a grant that
    could never let such a call run is not offered): so only while one approval is missing,
    under that setting. Anywhere else they would count as a plain approval, so they are not
    offered (``policy`` None, where the settings are not at hand: not offered either).

    A tool no grant could ever let run (``always_ask``, ``deny``, outside the
    ``supervised`` level) is offered neither: Always there would promise what it cannot do.
    """
    if policy is not None and not grants_possible(policy, record.tool):
        return False
    if record.quorum <= 1:
        return True
    return (
        policy is not None
        and policy.quorum.grants_satisfy
        and len(record.votes) + 1 >= record.quorum
    )


def _life(record: ApprovalRecord, fallback: float) -> float:
    life = record.expires_at - record.created_at
    return life if life > 0 else fallback


def card_for(
    record: ApprovalRecord, *, timeout_s: float, policy: EffectivePolicy | None = None
) -> ApprovalCard:
    decided_by = record.decided_by or ""
    if decided_by and record.decided_by_name and record.decided_by_name != decided_by:
        decided_by = f"{record.decided_by_name} ({decided_by})"
    if record.status is ApprovalStatus.ALWAYS and decided_by:
        decided_by = f"{decided_by} (always)"
    if record.status is ApprovalStatus.EXPIRED:
        decided_by = f"runtime ({record.reason or 'expired'})"
    requested_by = record.requester_name or record.requester
    if record.requester_name and record.requester_name != record.requester:
        requested_by = f"{record.requester_name} ({record.requester})"
    always = offers_grants(record, policy)
    # names come from the platform (a display name is whatever its owner typed): shown, not
    # obeyed, like the arguments
    return ApprovalCard(
        approval_id=record.id,
        tool=visible(record.tool),
        lines=record.summary,
        reason=record.ask_reason,
        requested_by=visible(requested_by),
        state=_CARD_STATE[record.status],
        decided_by=visible(decided_by),
        # the life the card was given when asked (its tool's and agent's, before any reload)
        timeout_s=_life(record, timeout_s),
        full_text=record.full_text or "\n".join(record.summary),
        cut=record.cut,
        escalated_to=visible(escalated_names(record.escalated_to, record.escalated_roles)),
        grant_choices=tuple(
            GrantOption(key=c.key, label=visible(c.label))
            for c in (record.grant_choices if always else ())
        ),
        quorum=quorum_progress(record, policy),
        diff=record.diff_text,
        always=always,
    )


def decision_for(record: ApprovalRecord, fingerprint: str) -> ApprovalDecision:
    """The decision a waiting turn gets from a decided row.

    A row whose fingerprint differs from the call's is a broken invariant; it is refused
    rather than approving a different call."""
    if record.fingerprint != fingerprint:
        return ApprovalDecision.by_runtime(RuntimeReason.ARGUMENTS_CHANGED)
    match record.status:
        case ApprovalStatus.EXPIRED | ApprovalStatus.PENDING:
            # pending only when the row vanished from under the ask: nobody decided it
            return ApprovalDecision.by_runtime(RuntimeReason.parse(record.reason), Decision.EXPIRED)
        case ApprovalStatus.EDITED:
            return ApprovalDecision(
                verdict=Decision.EDITED,
                decided_by=record.decided_by or reasons.RUNTIME,
                replacement_text=record.reply or "",
            )
        case status:
            return ApprovalDecision(
                verdict=status.decision, decided_by=record.decided_by or reasons.RUNTIME
            )
