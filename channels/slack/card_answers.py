"""Answers to approval cards on Slack: button presses, reactions, deny-with-a-reply
submissions, and "Show full and decide".

Each answer is reported to the host as an :class:`~bot.channel.ApprovalClick`; the adapter
authorises nothing itself. A refusal (the host's :class:`~bot.channel.ClickVerdict`) is told
to the clicker in an ephemeral message beside the card; an accepted answer shows on the card,
which the approval service edits. Every answer is reported with the card it came from
(:attr:`~bot.channel.ApprovalClick.card`): when the request is no longer open, the approval
service edits that card to its outcome. The adapter never closes a card itself.

"✏️ Reply instead" and "🔎 Show full and decide" open their modal right after the ack, since
the ``trigger_id`` expires 3 seconds after the press (:mod:`channels.slack.inbound` calls
:meth:`ApprovalClicks.reply_requested` and :meth:`ApprovalClicks.full_view_requested` from
the listener). The host is asked first whether the presser may decide the approval
(:meth:`~bot.channel.ChannelHost.approval_refusal`); a refused presser gets the ephemeral note
a refused click gets instead of the modal. The full view (:mod:`channels.slack.full_view`) is
built from the approval as its row is now (:meth:`~bot.channel.ChannelHost.approval_card`),
so a card from before a restart opens it too. Answers from a modal are still reported and
decided by the host, since the request may have changed while the modal was open.

A press of Approve / Always / Deny in the full view is reported with ``full_view=True`` and
the view is then replaced with the outcome (or the refusal). An Approve or Always from the
card itself (a stale button, a reaction) is reported with ``full_view=False``, so the service
refuses it for a cut request (``NEEDS_FULL_VIEW``); for a card the adapter itself could only
show in part (:func:`~channels.slack.cards.approvable_on_card`), the adapter refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from bot.channel import (
    ApprovalCard,
    ApprovalChoice,
    ApprovalClick,
    CardState,
    ChannelHost,
    ClickVerdict,
    SentMessage,
)
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelAuthError, ChannelError
from channels.common.card_index import CardIndex
from channels.slack.api import SlackWebApi
from channels.slack.buttons import (
    CardPlace,
    parse_click,
    parse_reaction,
    parse_reply_click,
    parse_show_full_click,
)
from channels.slack.cards import approvable_on_card
from channels.slack.full_view import OUTCOMES, FullViewClick, full_view, outcome_view
from channels.slack.normalise import BotIdentity
from channels.slack.reply_instead import ReplySubmission, reply_modal

log = structlog.get_logger(__name__)

MODAL_FAILED = "The reply form could not be opened. Press ✏️ Reply instead again."
FULL_VIEW_FAILED = "The full request could not be opened. Press 🔎 Show full and decide again."


class ApprovalClicks:
    """Reports answers on approval cards to the host and tells the clicker a refusal."""

    def __init__(self, *, ref: ChannelRef, api: SlackWebApi, cards: CardIndex) -> None:
        self._ref = ref
        self._api = api
        self._cards = cards

    # -- modal buttons: called from the listener, right after the ack -----------------------

    async def reply_requested(self, host: ChannelHost | None, body: Mapping[str, Any]) -> None:
        """Open the reply modal for a presser the host would let decide; anyone else is
        told why not instead."""
        click = parse_reply_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        if host is not None:
            refused = await host.approval_refusal(
                channel=self._ref, approval_id=click.place.approval_id, user_id=click.user_id
            )
            if refused is not None:
                log.info("slack_reply_refused", channel=str(self._ref), verdict=refused.value)
                await self._tell(click.place, click.user_id, refused.message)
                return
        try:
            await self._api.open_view(trigger_id=click.trigger_id, view=reply_modal(click.place))
        except ChannelError as exc:
            log.warning("slack_reply_modal_failed", channel=str(self._ref), error=str(exc))
            await self._tell(click.place, click.user_id, MODAL_FAILED)

    async def full_view_requested(self, host: ChannelHost | None, body: Mapping[str, Any]) -> None:
        """Open the full view for a presser the host would let decide, built from the
        approval as its row is now; anyone else is told why not instead."""
        click = parse_show_full_click(body)
        if click is None or host is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        place = click.place
        card = await self._full_view_card(host, place, click.user_id)
        if isinstance(card, ClickVerdict):
            log.info("slack_full_view_refused", channel=str(self._ref), verdict=card.value)
            await self._tell(place, click.user_id, card.message)
            return
        try:
            await self._api.open_view(trigger_id=click.trigger_id, view=full_view(card, place))
        except ChannelError as exc:
            log.warning("slack_full_view_failed", channel=str(self._ref), error=str(exc))
            await self._tell(place, click.user_id, FULL_VIEW_FAILED)

    async def _full_view_card(
        self, host: ChannelHost, place: CardPlace, user_id: str
    ) -> ApprovalCard | ClickVerdict:
        """The card to show whole, or why ``user_id`` gets no full view (the refusal a click
        would get; the request expired or was decided)."""
        refused = await host.approval_refusal(
            channel=self._ref, approval_id=place.approval_id, user_id=user_id
        )
        if refused is not None:
            return refused
        card = await host.approval_card(channel=self._ref, approval_id=place.approval_id)
        if card is None or card.state is CardState.EXPIRED:
            return ClickVerdict.UNKNOWN
        if card.state is not CardState.PENDING:
            return ClickVerdict.ALREADY_DECIDED
        return card

    # -- answers: called by the inbound worker, in order -------------------------------------

    async def click(self, host: ChannelHost, body: Mapping[str, Any]) -> None:
        click = parse_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        await self._answer(host, click.place, choice=click.choice, user_id=click.user_id)

    async def reply(self, host: ChannelHost, reply: ReplySubmission) -> None:
        await self._answer(
            host,
            reply.place,
            choice=ApprovalChoice.DENY,
            user_id=reply.user_id,
            replacement_text=reply.text,
        )

    async def reaction(self, host: ChannelHost, bot: BotIdentity, event: Mapping[str, Any]) -> None:
        reaction = parse_reaction(event)
        if reaction is None or reaction.user_id == bot.user_id:
            return
        card = await self._cards.find(reaction.channel_id, reaction.message_ts)
        if card is None or not card.open:
            return
        place = CardPlace(
            approval_id=card.approval_id,
            channel_id=reaction.channel_id,
            message_ts=reaction.message_ts,
            thread_ts=card.thread_id,
        )
        await self._answer(host, place, choice=reaction.choice, user_id=reaction.user_id)

    async def full_view_answer(self, host: ChannelHost, click: FullViewClick) -> None:
        """Report a press in the full view, then show its outcome (or refusal) in the view.
        If the view cannot be updated (closed, or a second press already changed it), a
        refusal is told privately instead; an accepted answer shows on the card anyway."""
        verdict = await self._decide(
            host, click.place, choice=click.choice, user_id=click.user_id, full_view=True
        )
        accepted = verdict is ClickVerdict.ACCEPTED
        text = OUTCOMES[click.choice] if accepted else verdict.message
        try:
            await self._api.update_view(
                view_id=click.view_id,
                view=outcome_view(text, click.place),
                view_hash=click.view_hash,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.info("slack_full_view_update_failed", channel=str(self._ref), error=str(exc))
            if not accepted:
                await self._tell(click.place, click.user_id, verdict.message)

    async def _answer(
        self,
        host: ChannelHost,
        place: CardPlace,
        *,
        choice: ApprovalChoice,
        user_id: str,
        replacement_text: str | None = None,
    ) -> None:
        """Report an answer from a card (or the reply modal); a refusal is told privately."""
        verdict = await self._decide(
            host, place, choice=choice, user_id=user_id, replacement_text=replacement_text
        )
        if verdict is not ClickVerdict.ACCEPTED:
            await self._tell(place, user_id, verdict.message)

    async def _shown_in_part(self, host: ChannelHost, place: CardPlace) -> bool:
        """Whether the card could only show part of a request the service did not cut (its
        summary did not fit one message): the service cannot know, so the adapter refuses
        Approve / Always from such a card itself."""
        card = await host.approval_card(channel=self._ref, approval_id=place.approval_id)
        if card is None or card.cut or card.state is not CardState.PENDING:
            return False  # unknown, decided or cut: the service answers
        return not approvable_on_card(card)

    async def _decide(
        self,
        host: ChannelHost,
        place: CardPlace,
        *,
        choice: ApprovalChoice,
        user_id: str,
        replacement_text: str | None = None,
        full_view: bool = False,
    ) -> ClickVerdict:
        approving = not full_view and choice is not ApprovalChoice.DENY
        if approving and await self._shown_in_part(host, place):
            refused = await host.approval_refusal(
                channel=self._ref, approval_id=place.approval_id, user_id=user_id
            )
            log.info("slack_approval_needs_full_view", channel=str(self._ref))
            return refused or ClickVerdict.NEEDS_FULL_VIEW
        card = None
        if place.message_ts:
            target = DeliveryTarget(
                channel=self._ref, conversation_id=place.channel_id, thread_id=place.thread_ts
            )
            card = SentMessage(target=target, message_id=place.message_ts)
        click = ApprovalClick(
            channel=self._ref,
            approval_id=place.approval_id,
            choice=choice,
            user_id=user_id,
            replacement_text=replacement_text,
            card=card,
            full_view=full_view,
        )
        verdict = await host.approval_clicked(click)
        log.info(
            "slack_approval_answer",
            channel=str(self._ref),
            verdict=verdict.value,
            full_view=full_view,
        )
        return verdict

    async def _tell(self, place: CardPlace, user_id: str, text: str) -> None:
        """An ephemeral note to ``user_id`` beside the card; a failure is only logged."""
        try:
            await self._api.post_ephemeral(
                channel=place.channel_id, user=user_id, text=text, thread_ts=place.thread_ts
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_ephemeral_failed", channel=str(self._ref), error=str(exc))
