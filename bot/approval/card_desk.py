"""Approval cards on the platform: posting them, and showing a row's state on them.

The row is the truth (:func:`~bot.approval.card.card_for`): every edit renders it as it is
now, so edits from the asking side, a restart and a late click can race and still leave each
card showing the same outcome. A channel failure while posting or editing is logged, never
raised: a card that cannot be posted means the request is expired by the caller, a card
that cannot be edited keeps its last state.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Protocol

import structlog

from bot import telemetry
from bot.approval import reasons
from bot.approval.card import card_for, parse_channel_ref
from bot.approval.policy import EffectivePolicy
from bot.approval.reach import ROLE_ENTRY
from bot.approval.reasons import RuntimeReason
from bot.cards import APPROVERS_PREFIX
from bot.channel import ApprovalCard, Channel, SentMessage
from bot.config import DEFAULT_AGENT
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus, CardRef
from bot.store.conversation_titles import place
from bot.store.display_names import identity
from bot.visible_text import visible

log = structlog.get_logger(__name__)

ChannelLookup = Callable[[ChannelRef], Channel | None]


#: The approval settings in force for a channel alias and the agent that asked.
class PolicyLookup(Protocol):
    """The policy in force on a channel alias under an agent; with a tool, its reminder
    schedule (and escalation) is that tool's
    (:meth:`bot.approval.policy.ApprovalPolicy.for_channel`)."""

    def __call__(
        self, ref: ChannelRef, agent: str, tool: str | None = None, /
    ) -> EffectivePolicy: ...


def outcome_notice(record: ApprovalRecord) -> str:
    """The outcome of a decided request in one line, for a conversation whose card could
    not be edited (:meth:`CardDesk.tell_outcome`)."""
    who = visible(record.decided_by_name or record.decided_by or "")
    if record.status is ApprovalStatus.EXPIRED:
        what = f"expired ({visible(record.reason or 'timeout')})"
    elif record.status is ApprovalStatus.DENIED:
        what = f"denied by {who}"
    elif record.status is ApprovalStatus.EDITED:
        what = f"answered with a reply by {who}"
    else:
        what = f"approved by {who}"
    tool = visible(record.tool)
    return f"🔐 The approval request for {tool} was {what}. (Its card could not be updated.)"


def policy_of(policy_for: PolicyLookup, record: ApprovalRecord) -> EffectivePolicy:
    """The settings in force for ``record``: its channel alias's, under the agent whose turn
    asked (a row from before the agent was stored: the default agent's)."""
    return policy_for(parse_channel_ref(record.channel), record.agent or DEFAULT_AGENT)


def escalated_now(policy_for: PolicyLookup, record: ApprovalRecord) -> tuple[list[str], list[str]]:
    """The users and roles ``record`` was escalated to that the configuration in force still
    escalates its tool to: one taken out of ``escalate_to`` (or ``escalate_to_roles``) by a
    reload, or while the daemon was stopped, may no longer decide it."""
    policy = policy_for(
        parse_channel_ref(record.channel), record.agent or DEFAULT_AGENT, record.tool
    )
    users = [u for u in record.escalated_to if u in policy.escalate_to]
    roles = [r for r in record.escalated_roles if r in policy.escalate_to_roles]
    return users, roles


#: What a failing adapter may raise while posting or editing a card.
CHANNEL_FAILURES = (ChannelError, OSError, TimeoutError)
#: How long editing the clicked card may take: the clicker is still waiting for their answer
#: (Discord wants an interaction answered within 3 s).
CLICKED_CARD_EDIT_S = 2.0


class CardDesk:
    """Posts and edits the cards of approval rows, through the channel each row names."""

    def __init__(self, store: Store, channel_for: ChannelLookup, policy_for: PolicyLookup) -> None:
        self._store = store
        self._channel_for = channel_for
        self._policy_for = policy_for

    async def post(
        self,
        channel: Channel,
        record: ApprovalRecord,
        target: DeliveryTarget,
        *,
        dm_to: tuple[str, ...] = (),
    ) -> list[CardRef]:
        """Post the pending card to ``target``, then a copy to each user in ``dm_to``;
        returns where the copies are (the conversation's first), empty when the first could
        not be posted. A DM copy that cannot be posted (the user never started the bot,
        closed their DMs) is logged and left out."""
        if channel.cards is None:
            log.warning("approval_card_failed", approval_id=record.id, error="no cards")
            return []
        card = await self._card(record, elsewhere=False)
        try:
            with telemetry.send(target.channel.kind, "approval_card"):
                sent = await channel.cards.post_approval_card(target, card)
        except CHANNEL_FAILURES as exc:
            log.warning("approval_card_failed", approval_id=record.id, error=scrub_text(str(exc)))
            return []
        return [_ref(sent), *await self.post_copies(channel, record, dm_to)]

    async def post_copies(
        self, channel: Channel, record: ApprovalRecord, users: tuple[str, ...] | list[str]
    ) -> list[CardRef]:
        """A copy of the card as the row is now in each of ``users``' DMs; returns where they
        are. A copy that cannot be posted (the user never started the bot, closed their DMs)
        is logged and left out."""
        cards = channel.cards
        if cards is None or not users:
            return []
        ref = parse_channel_ref(record.channel)
        card = await self._card(record, elsewhere=True)
        refs: list[CardRef] = []
        # Adapters treat a DeliveryTarget whose conversation_id is a user id as that user's DM.
        for approver in users:
            dm = DeliveryTarget(channel=ref, conversation_id=approver)
            try:
                with telemetry.send(ref.kind, "approval_card"):
                    sent = await cards.post_approval_card(dm, card)
                refs.append(dataclasses.replace(_ref(sent), for_user=approver))
            except CHANNEL_FAILURES as exc:
                log.warning(
                    "approval_dm_card_failed",
                    approval_id=record.id,
                    approver=approver,
                    error=scrub_text(str(exc)),
                )
        return refs

    async def tell_waiting(
        self, channel: Channel, record: ApprovalRecord, target: DeliveryTarget
    ) -> None:
        """Tell the requester, in a conversation where nobody else can answer the card (their
        DM with the bot), that the call waits for an approver, instead of showing them a
        card whose buttons they cannot use."""
        try:
            await channel.send(target, waiting_notice(record, await self.approver_names(record)))
        except CHANNEL_FAILURES as exc:
            log.warning(
                "approval_waiting_notice_failed", approval_id=record.id, error=scrub_text(str(exc))
            )

    async def approver_names(self, record: ApprovalRecord) -> str:
        """Whom ``record`` names as able to approve it (:func:`bot.approval.reach.named_approvers`),
        as a card shows them: ``Ann (U012), role sre`` (the display name where the person
        wrote to the bot, the id alone otherwise); made visible."""
        users = [u for u in record.approvers_named if not u.startswith(ROLE_ENTRY)]
        roles = [u.removeprefix(ROLE_ENTRY) for u in record.approvers_named if u not in users]
        kind = parse_channel_ref(record.channel).kind
        names = await self._store.display_names.of(identity(kind, u) for u in users)
        shown = [
            f"{names[identity(kind, u)]} ({u})" if identity(kind, u) in names else u for u in users
        ]
        return visible(", ".join([*shown, *(f"role {r}" for r in roles)]))

    async def edit_all(self, approval_id: str) -> ApprovalRecord | None:
        """Edit every stored copy of the card to the row's current state; returns the row."""
        record = await self._store.approvals.get(approval_id)
        if record is None or not record.card_refs:
            return record
        ref = parse_channel_ref(record.channel)
        for cref in record.card_refs:
            target = DeliveryTarget(
                channel=ref, conversation_id=cref.conversation_id, thread_id=cref.thread_id
            )
            await self._edit(record, SentMessage(target=target, message_id=cref.message_id))
        return record

    async def show_outcome(self, approval_id: str, message: SentMessage) -> None:
        """Edit one card (a clicked one, stored or not) to the outcome of a request that is
        no longer open. The row is read again: a concurrent click may have decided it."""
        record = await self._store.approvals.get(approval_id)
        if record is None or record.status is ApprovalStatus.PENDING:
            return
        try:
            async with asyncio.timeout(CLICKED_CARD_EDIT_S):
                await self._edit(record, message)
        except TimeoutError:
            log.warning("approval_card_edit_slow", approval_id=approval_id)

    async def tell_outcome(self, record: ApprovalRecord) -> bool:
        """A decided card whose place was never stored (a kill between posting it and
        storing its message id): no platform lets the bot find that message again for
        certain (Telegram has no history for bots), so the conversation is told the outcome
        in a new message instead, once its resumption shows it. True when sent."""
        if record.card_refs or record.status is ApprovalStatus.PENDING:
            return False
        if record.reason == reasons.AnswerRoute.CLICK:
            return False  # the click edited the card it came from (CardFlow)
        ref = parse_channel_ref(record.channel)
        channel = self._channel_for(ref)
        if channel is None:
            return False
        target = DeliveryTarget(
            channel=ref, conversation_id=record.conversation_id, thread_id=record.thread_id
        )
        try:
            await channel.send(target, outcome_notice(record))
        except CHANNEL_FAILURES as exc:
            log.warning(
                "approval_outcome_notice_failed", approval_id=record.id, error=scrub_text(str(exc))
            )
            return False
        log.info("approval_outcome_told", approval_id=record.id, status=record.status)
        return True

    async def notify_expired(self, record: ApprovalRecord, why: RuntimeReason) -> None:
        """Tell the request's conversation that it expired at a restart or shutdown and must
        be asked again."""
        ref = parse_channel_ref(record.channel)
        channel = self._channel_for(ref)
        if channel is None:
            return
        target = DeliveryTarget(
            channel=ref, conversation_id=record.conversation_id, thread_id=record.thread_id
        )
        try:
            notice = reasons.EXPIRED_NOTICE.get(why, reasons.EXPIRED_NOTICE[RuntimeReason.RESTART])
            await channel.send(target, notice.format(tool=record.tool))
        except CHANNEL_FAILURES as exc:
            log.warning(
                "approval_expiry_notice_failed", approval_id=record.id, error=scrub_text(str(exc))
            )

    async def _edit(self, record: ApprovalRecord, message: SentMessage) -> None:
        ref = parse_channel_ref(record.channel)
        channel = self._channel_for(ref)
        if channel is None or channel.cards is None:
            return
        elsewhere = message.target.conversation_id != record.conversation_id
        card = await self._card(record, elsewhere=elsewhere)
        try:
            await channel.cards.update_approval_card(message, card)
        except CHANNEL_FAILURES as exc:
            log.warning(
                "approval_card_edit_failed", approval_id=record.id, error=scrub_text(str(exc))
            )

    async def _card(self, record: ApprovalRecord, *, elsewhere: bool) -> ApprovalCard:
        """The card of ``record`` as it is now; a copy ``elsewhere`` (an approver's DM)
        also says which conversation asked: its title where one is known, and its id."""
        policy = policy_of(self._policy_for, record)
        card = card_for(record, timeout_s=policy.timeout_s, policy=policy)
        # a quorum card's progress line already says who else may approve
        if (
            record.approvers_named
            and record.status is ApprovalStatus.PENDING
            and record.quorum <= 1
        ):
            card = dataclasses.replace(card, approvers=await self.approver_names(record))
        if not elsewhere:
            return card
        where = place(record.channel, record.conversation_id, record.thread_id)
        titles = await self._store.conversation_titles.of([where])
        asked_in = f"{record.channel} {record.conversation_id}"
        if record.thread_id:
            asked_in += f" (thread {record.thread_id})"
        if where in titles:
            asked_in = f"{titles[where]} · {asked_in}"
        return dataclasses.replace(card, asked_in=visible(asked_in))


def waiting_notice(record: ApprovalRecord, approvers: str = "") -> str:
    """What the requester reads in their DM while their call waits for an approver;
    ``approvers``: who can approve it, where they may be named."""
    who = f" ({APPROVERS_PREFIX.lower()}{approvers})" if approvers else ""
    return (
        f"🔐 {visible(record.tool)} waits for an approver{who}: the request was sent to the "
        "approvers. The answer comes here."
    )


def _ref(sent: SentMessage) -> CardRef:
    return CardRef(
        conversation_id=sent.target.conversation_id,
        thread_id=sent.target.thread_id,
        message_id=sent.message_id,
    )
