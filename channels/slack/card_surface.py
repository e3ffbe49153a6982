"""Answers on approval cards on Slack: button presses, reactions, reply-instead submissions
and presses in the full view, reported to the core as :class:`~bot.cards.CardAction` values
and answered through a :class:`~bot.cards.CardSurface`. Nothing here decides what an answer
means (:mod:`bot.approval.card_flow` does).

Refusals are told in an ephemeral message beside the card; an accepted answer shows on the
card, which the approval service edits. Every answer names the card it came from
(:attr:`~bot.cards.CardAction.card`), so the core edits it to the outcome of a request that
is no longer open. A card is drawn whole unless it cannot fit
(:func:`~channels.slack.cards.approvable_on_card`): Approve and Always from a card that
could not show everything do not count.

"✏️ Reply instead" and "🔎 Show full and decide" open their modal right after the ack, since
the ``trigger_id`` expires 3 seconds after the press (:mod:`channels.slack.inbound` calls
:meth:`SlackCardAnswers.reply_requested` and :meth:`SlackCardAnswers.full_view_requested`
from the listener); a presser the core refuses gets the ephemeral refusal instead. A press
in the full view is answered in the view: it is replaced with the outcome (or the refusal);
when it cannot be (closed, or a second press changed it), a refusal is told privately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from bot.cards import (
    Actor,
    ApprovalCard,
    ApprovalChoice,
    CardAction,
    CardReply,
    CardReplyKind,
    CardVerb,
)
from bot.channel import ChannelHost
from bot.envelope import ChannelRef, DeliveryTarget, SentMessage
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


class SlackCardAnswers:
    """Reports answers on approval cards to the host and answers them on Slack."""

    def __init__(self, *, ref: ChannelRef, api: SlackWebApi, cards: CardIndex) -> None:
        self._ref = ref
        self._api = api
        self._cards = cards

    # -- modal buttons: called from the listener, right after the ack -----------------------

    async def reply_requested(self, host: ChannelHost | None, body: Mapping[str, Any]) -> None:
        """Open the reply modal for a presser the core would let decide."""
        click = parse_reply_click(body)
        if click is None or host is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        surface = _CardSurface(self._ref, self._api, click.place, click.user_id, click.trigger_id)
        await self._report(host, click.place, CardVerb.REPLY, click.user_id, surface)

    async def full_view_requested(self, host: ChannelHost | None, body: Mapping[str, Any]) -> None:
        """Open the full view for a presser the core would let decide, built from the
        approval as its row is now."""
        click = parse_show_full_click(body)
        if click is None or host is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        surface = _CardSurface(self._ref, self._api, click.place, click.user_id, click.trigger_id)
        await self._report(host, click.place, CardVerb.SHOW_FULL, click.user_id, surface)

    # -- answers: called by the inbound worker, in order -------------------------------------

    async def click(self, host: ChannelHost, body: Mapping[str, Any]) -> None:
        click = parse_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        surface = _CardSurface(self._ref, self._api, click.place, click.user_id)
        await self._report(host, click.place, CardVerb(click.choice), click.user_id, surface)

    async def reply(self, host: ChannelHost, reply: ReplySubmission) -> None:
        surface = _CardSurface(self._ref, self._api, reply.place, reply.user_id)
        await self._report(
            host, reply.place, CardVerb.REPLY, reply.user_id, surface, reply=reply.text
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
        surface = _CardSurface(self._ref, self._api, place, reaction.user_id)
        await self._report(host, place, CardVerb(reaction.choice), reaction.user_id, surface)

    async def full_view_answer(self, host: ChannelHost, click: FullViewClick) -> None:
        """Report a press in the full view, then show its outcome (or refusal) in the view."""
        surface = _FullViewSurface(self._ref, self._api, click)
        await self._report(
            host, click.place, CardVerb(click.choice), click.user_id, surface, full_view=True
        )

    async def _report(
        self,
        host: ChannelHost,
        place: CardPlace,
        verb: CardVerb,
        user_id: str,
        surface: _CardSurface | _FullViewSurface,
        *,
        reply: str | None = None,
        full_view: bool = False,
    ) -> None:
        card = None
        if place.message_ts:
            target = DeliveryTarget(
                channel=self._ref, conversation_id=place.channel_id, thread_id=place.thread_ts
            )
            card = SentMessage(target=target, message_id=place.message_ts)
        action = CardAction(
            channel=self._ref,
            approval_id=place.approval_id,
            verb=verb,
            actor=Actor(user_id=user_id),
            full_view=full_view,
            reply=reply,
            card=card,
        )
        answered = await host.card_action(action, surface)
        log.info(
            "slack_approval_answer",
            channel=str(self._ref),
            verb=verb.value,
            answer=answered.kind.value,
            verdict=answered.verdict.value,
            full_view=full_view,
        )


class _CardSurface:
    """Answers an action on a card: an ephemeral note beside it, or a modal."""

    def __init__(
        self,
        ref: ChannelRef,
        api: SlackWebApi,
        place: CardPlace,
        user_id: str,
        trigger_id: str = "",
    ) -> None:
        self._ref = ref
        self._api = api
        self._place = place
        self._user_id = user_id
        self._trigger_id = trigger_id

    def shows_whole(self, card: ApprovalCard) -> bool:
        return approvable_on_card(card)

    async def tell(self, reply: CardReply) -> None:
        if reply.kind is not CardReplyKind.ACCEPTED:  # the card edit shows an accepted one
            await self._ephemeral(reply.text)

    async def open_reply_form(self, approval_id: str) -> None:
        await self._open(reply_modal(self._place), MODAL_FAILED)

    async def show_full(self, card: ApprovalCard) -> None:
        await self._open(full_view(card, self._place), FULL_VIEW_FAILED)

    async def _open(self, view: dict[str, object], failed: str) -> None:
        try:
            await self._api.open_view(trigger_id=self._trigger_id, view=view)
        except ChannelError as exc:
            log.warning("slack_modal_failed", channel=str(self._ref), error=str(exc))
            await self._ephemeral(failed)

    async def _ephemeral(self, text: str) -> None:
        """An ephemeral note to the actor beside the card; a failure is only logged."""
        try:
            await self._api.post_ephemeral(
                channel=self._place.channel_id,
                user=self._user_id,
                text=text,
                thread_ts=self._place.thread_ts,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_ephemeral_failed", channel=str(self._ref), error=str(exc))


class _FullViewSurface(_CardSurface):
    """Answers a press in the full view: the view is replaced with the outcome."""

    def __init__(self, ref: ChannelRef, api: SlackWebApi, click: FullViewClick) -> None:
        super().__init__(ref, api, click.place, click.user_id)
        self._click = click

    async def tell(self, reply: CardReply) -> None:
        accepted = reply.kind is CardReplyKind.ACCEPTED
        text = OUTCOMES[ApprovalChoice(self._click.choice)] if accepted else reply.text
        try:
            await self._api.update_view(
                view_id=self._click.view_id,
                view=outcome_view(text, self._click.place),
                view_hash=self._click.view_hash,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.info("slack_full_view_update_failed", channel=str(self._ref), error=str(exc))
            if not accepted:
                await self._ephemeral(reply.text)
