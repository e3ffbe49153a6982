"""A real :class:`~bot.channel.ChannelHost` for adapter tests, shared by the platform fakes.

It records every envelope and approval click; ``verdict`` decides what a click is told, and
what a request for the full view or the reply form is answered for the same user (a DENY
click asked about, recorded nowhere); :meth:`RecordingHost.card_action` carries the answer
out on the adapter's surface as the daemon's host does.
``hold`` makes :meth:`RecordingHost.deliver` wait for an event (a slow gateway);
``crash_on`` names a message text whose delivery raises :class:`HostCrash` (the daemon
dying while it handles that message).
``replica`` plays the roles :meth:`RecordingHost.lead` is asked for: the one process of a
SQLite store unless a test gives a lease keeper (several replicas over one database).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bot.cards import (
    CardAction,
    CardReply,
    CardReplyKind,
    CardState,
    CardSurface,
    CardVerb,
    answer_on,
)
from bot.channel import ApprovalCard, ApprovalChoice, ClickVerdict, SentMessage
from bot.channel_host import SOLE_PROCESS, Replica
from bot.envelope import ChannelRef, IngressEnvelope


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalClick:
    """A decision reported on a card (:class:`~bot.cards.CardAction`), in the form tests
    record and assert on."""

    channel: ChannelRef
    approval_id: str
    choice: ApprovalChoice
    user_id: str
    user_roles: tuple[str, ...] = ()
    replacement_text: str | None = None  # deny-with-edit
    card: SentMessage | None = None
    #: The answer came from a view that showed the whole request (or from a card that was
    #: not cut). Approving a cut request needs it.
    full_view: bool = False


Verdict = Callable[[ApprovalClick], ClickVerdict]


class HostCrash(Exception):
    """Raised by :class:`RecordingHost` to model the daemon dying while handling a message."""


def accept_all(_click: ApprovalClick) -> ClickVerdict:
    return ClickVerdict.ACCEPTED


def approver_verdict(
    *,
    approvers: Sequence[str] = (),
    approver_roles: Sequence[str] = (),
    pending: Sequence[str] = (),
) -> Verdict:
    """ACCEPTED for an approver (by user id or role) on a pending approval id,
    NOT_AUTHORISED for anyone else, UNKNOWN for ids that are not pending."""
    users, roles, open_ids = set(approvers), set(approver_roles), set(pending)

    def verdict(click: ApprovalClick) -> ClickVerdict:
        if click.approval_id not in open_ids:
            return ClickVerdict.UNKNOWN
        if click.user_id in users or roles & set(click.user_roles):
            return ClickVerdict.ACCEPTED
        return ClickVerdict.NOT_AUTHORISED

    return verdict


class RecordingHost:
    """Records envelopes and clicks and lets a test wait for them."""

    def __init__(
        self,
        verdict: Verdict = accept_all,
        *,
        hold: asyncio.Event | None = None,
        crash_on: str | None = None,
        replica: Replica = SOLE_PROCESS,
    ) -> None:
        self.verdict = verdict
        self.replica = replica
        self.hold = hold
        self.crash_on = crash_on
        self.envelopes: list[IngressEnvelope] = []
        self.clicks: list[ApprovalClick] = []
        #: Every answer on a card as reported (decisions are also :attr:`clicks`).
        self.actions: list[CardAction] = []
        #: Messages reported edited (as they read now) and deleted (channel, message id).
        self.edits: list[IngressEnvelope] = []
        self.deletions: list[tuple[ChannelRef, str]] = []
        #: What :meth:`approval_card` answers, by approval id (tests put cards here).
        self.cards: dict[str, ApprovalCard] = {}
        self._changed = asyncio.Condition()

    async def deliver(self, envelope: IngressEnvelope) -> None:
        if self.hold is not None:
            await self.hold.wait()
        if self.crash_on is not None and envelope.text == self.crash_on:
            raise HostCrash(envelope.message_id)
        async with self._changed:
            self.envelopes.append(envelope)
            self._changed.notify_all()

    async def edited(self, envelope: IngressEnvelope) -> None:
        async with self._changed:
            self.edits.append(envelope)
            self._changed.notify_all()

    async def deleted(self, channel: ChannelRef, message_id: str) -> None:
        async with self._changed:
            self.deletions.append((channel, message_id))
            self._changed.notify_all()

    async def wait_edits(self, count: int, wait_s: float = 10.0) -> list[IngressEnvelope]:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(self.edits) >= count)
        return list(self.edits)

    async def wait_deletions(
        self, count: int, wait_s: float = 10.0
    ) -> list[tuple[ChannelRef, str]]:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(self.deletions) >= count)
        return list(self.deletions)

    async def card_action(self, action: CardAction, surface: CardSurface) -> CardReply:
        reply = await self._reply(action, surface)
        await answer_on(surface, reply)
        async with self._changed:
            self.actions.append(action)
            self._changed.notify_all()
        return reply

    async def _reply(self, action: CardAction, surface: CardSurface) -> CardReply:
        choice = action.verb.choice
        decides = choice is not None and (
            action.verb is not CardVerb.REPLY or action.reply is not None
        )
        if decides and not self._shown_in_part(action, surface):
            return CardReply.of(await self.approval_clicked(as_click(action)))
        refused = await self.approval_refusal(
            channel=action.channel,
            approval_id=action.approval_id,
            user_id=action.actor.user_id,
            user_roles=action.actor.roles,
        )
        if refused is not None:
            return CardReply.of(refused)
        if decides:
            return CardReply.of(ClickVerdict.NEEDS_FULL_VIEW)
        if choice is not None:
            return CardReply(kind=CardReplyKind.OPEN_REPLY_FORM, approval_id=action.approval_id)
        card = self.cards.get(action.approval_id)
        if card is None or card.state is CardState.EXPIRED:
            return CardReply.of(ClickVerdict.UNKNOWN)
        if card.state is not CardState.PENDING:
            return CardReply.of(ClickVerdict.ALREADY_DECIDED)
        return CardReply(kind=CardReplyKind.SHOW_FULL, approval_id=card.approval_id, card=card)

    def _shown_in_part(self, action: CardAction, surface: CardSurface) -> bool:
        """An approval from a card the test gave (:attr:`cards`) that did not show all of it:
        refused, as the approval service does, and not recorded."""
        card = self.cards.get(action.approval_id)
        if action.verb.choice is ApprovalChoice.DENY or action.full_view or card is None:
            return False
        return card.cut or not surface.shows_whole(card)

    async def approval_clicked(self, click: ApprovalClick) -> ClickVerdict:
        async with self._changed:
            self.clicks.append(click)
            self._changed.notify_all()
        return self.verdict(click)

    async def approval_refusal(
        self,
        *,
        channel: ChannelRef,
        approval_id: str,
        user_id: str,
        user_roles: tuple[str, ...] = (),
    ) -> ClickVerdict | None:
        asked = ApprovalClick(
            channel=channel,
            approval_id=approval_id,
            choice=ApprovalChoice.DENY,
            user_id=user_id,
            user_roles=user_roles,
        )
        verdict = self.verdict(asked)
        return None if verdict is ClickVerdict.ACCEPTED else verdict

    async def approval_card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        return self.cards.get(approval_id)

    async def lead(
        self,
        channel: ChannelRef,
        role: str,
        work: Callable[[], Awaitable[None]],
        *,
        standby: Callable[[str], None] | None = None,
    ) -> None:
        await self.replica.lead(f"{channel}.{role}", work, standby=standby)

    async def wait_envelopes(self, count: int, wait_s: float = 10.0) -> list[IngressEnvelope]:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(self.envelopes) >= count)
        return list(self.envelopes)

    async def wait_actions(self, count: int, wait_s: float = 10.0) -> list[CardAction]:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(self.actions) >= count)
        return list(self.actions)

    async def wait_clicks(self, count: int, wait_s: float = 10.0) -> list[ApprovalClick]:
        async with asyncio.timeout(wait_s), self._changed:
            await self._changed.wait_for(lambda: len(self.clicks) >= count)
        return list(self.clicks)


def as_click(action: CardAction) -> ApprovalClick:
    """A decision reported as a :class:`CardAction`, in the form tests assert on."""
    choice = action.verb.choice
    assert choice is not None, action.verb
    return ApprovalClick(
        channel=action.channel,
        approval_id=action.approval_id,
        choice=choice,
        user_id=action.actor.user_id,
        user_roles=action.actor.roles,
        replacement_text=action.reply,
        card=action.card,
        full_view=action.full_view,
    )
