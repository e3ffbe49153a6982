"""Who can answer a card: approvers that can see the conversation, decided per envelope.

A card nobody can answer only makes a turn wait ``timeout_s`` for nothing, so before one is
posted the backchannel asks which eligible approvers (the alias's ``approvers``, less the
requester unless ``self_approval`` is on) can see the conversation:

* a direct message is seen by the requester alone;
* in a group, the channel's ``members`` (:class:`~bot.channel.MemberLookup`), where it has
  them, is asked per approver; an approver it says cannot see the conversation does not
  count, one it cannot tell about does (the platform is the judge of membership, not this
  module);
* ``approver_roles`` count for a group (role holders are found by the platform at click
  time), and for a direct message only when the requester may approve their own request.

Whom a card may *name* as able to approve (:func:`named_approvers`,
``approval.name_approvers``) is a separate, narrower question: never someone the requester
could not already know of. ``members`` (the default) names, in a group, the eligible
approvers the platform says can see the conversation, and the ``approver_roles``; in a
direct message nobody. ``all`` names every eligible approver and role; ``none`` nobody.

When nobody is left here, the approvers' direct messages (``dm_approvers``) are the last way
to reach someone; the backchannel refuses the call at once when none of those copies could
be posted either (a Telegram bot cannot message a user who never started it, Discord users
can close their DMs).
"""

from __future__ import annotations

import asyncio

import structlog

from bot.approval.policy import EffectivePolicy
from bot.channel import Channel
from bot.envelope import IngressEnvelope

log = structlog.get_logger(__name__)


def eligible_approvers(policy: EffectivePolicy, requester: str) -> tuple[str, ...]:
    """The listed approvers whose click on this requester's card would count."""
    return tuple(a for a in policy.approvers if a != requester or policy.self_approval)


#: Each eligible approver with whether they can see the conversation (None: unknown).
Reach = tuple[tuple[str, bool | None], ...]


async def approver_reach(
    channel: Channel | None, envelope: IngressEnvelope, policy: EffectivePolicy
) -> Reach:
    """Each eligible listed approver with whether they can see the envelope's conversation:
    True or False when known (a direct message is seen by its requester alone; in a group the
    platform says), None when the platform cannot tell or is not asked (``channel`` has no
    ``members``, or is None: not running, or ``hatchway policy explain`` offline)."""
    requester = envelope.sender.id
    eligible = eligible_approvers(policy, requester)
    if not envelope.is_group:
        return tuple((approver, approver == requester) for approver in eligible)
    members = channel.members if channel is not None else None
    if members is None:
        return tuple((approver, None) for approver in eligible)
    # asked together: a slow platform answer costs its latency once, not once per approver
    answers = await asyncio.gather(
        *(members.can_see(envelope.reply_target, approver) for approver in eligible)
    )
    return tuple(zip(eligible, answers, strict=True))


class ReachCheck:
    """One request's :func:`approver_reach`, asked of the platform at most once: whether
    the card can be answered here and whom it names read the same answers."""

    def __init__(
        self, channel: Channel | None, envelope: IngressEnvelope, policy: EffectivePolicy
    ) -> None:
        self._channel, self._envelope, self._policy = channel, envelope, policy
        self._answers: Reach | None = None

    async def answers(self) -> Reach:
        if self._answers is None:
            self._answers = await approver_reach(self._channel, self._envelope, self._policy)
        return self._answers


async def approvers_here(
    channel: Channel | None,
    envelope: IngressEnvelope,
    policy: EffectivePolicy,
    *,
    check: ReachCheck | None = None,
) -> bool:
    """Whether an eligible approver can see the card in the envelope's own conversation."""
    check = check or ReachCheck(channel, envelope, policy)
    if not envelope.is_group:
        reach = await check.answers()
        return any(seen for _, seen in reach) or bool(
            policy.approver_roles and policy.self_approval
        )
    if policy.approver_roles:
        return True
    reach = await check.answers()
    # an approver the platform cannot tell about counts (the platform is the judge)
    if any(seen is not False for _, seen in reach):
        return True
    log.info("approval_no_approver_in_conversation", conversation=envelope.conversation_id)
    return False


#: How a role is kept among the named approvers of a row (user ids never hold a colon).
ROLE_ENTRY = "role:"


async def named_approvers(
    channel: Channel | None,
    envelope: IngressEnvelope,
    policy: EffectivePolicy,
    *,
    check: ReachCheck | None = None,
) -> tuple[str, ...]:
    """Whom the card of a request in ``envelope`` names as able to approve it: user ids and
    ``role:NAME`` entries, as ``policy.name_approvers`` allows (the module docstring)."""
    mode = policy.name_approvers
    if mode == "none":
        return ()
    roles = tuple(f"{ROLE_ENTRY}{r}" for r in policy.approver_roles)
    if mode == "all":
        return (*eligible_approvers(policy, envelope.sender.id), *roles)
    if not envelope.is_group:
        return ()
    reach = await (check or ReachCheck(channel, envelope, policy)).answers()
    # only those the platform says can see it: one it cannot tell about may be a stranger
    return (*(a for a, seen in reach if seen is True), *roles)
