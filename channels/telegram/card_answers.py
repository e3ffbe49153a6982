"""Approval taps on Telegram: inline-keyboard button presses and reactions on cards.

A tap is decoded (:class:`~channels.telegram.normalise.CallbackCodec`), reported to the host
as an :class:`~bot.channel.ApprovalClick`, and answered with ``answerCallbackQuery``: silently
with "Recorded." when accepted, as an alert with the verdict's message otherwise (not
authorised, own request, already decided, expired). The adapter decides nothing; the host's
verdict is the answer. A tap is reported with the tapped card
(:attr:`~bot.channel.ApprovalClick.card`) when that message still offers this approval's
buttons; the approval service then edits it to its outcome if the request is no longer open
(a card whose place it never stored, after a crash right after posting, included).

The "✏️ Reply instead" button decides nothing: its answer says how to deny with a reply
(:mod:`channels.telegram.reply_instead`), to a tapper the host says may decide
(:meth:`~bot.channel.ChannelHost.approval_refusal`); anyone else gets the alert a refused tap
gets. The reply itself is still decided when it arrives.

"🔎 Show full and decide" (on a cut card) decides nothing either. To a tapper who may decide,
the tap is answered at once and the full view is posted as a reply to the card
(:meth:`~channels.telegram.outbound.TelegramOutbound.post_full_view`, from
:meth:`~bot.channel.ChannelHost.approval_card`, so a card from before a restart works too);
anyone else gets the refusal alert and nothing is posted. Taps on the full view's own buttons
are reported with ``full_view=True``; the host refuses an approval of a cut request without
it (:attr:`~bot.channel.ClickVerdict.NEEDS_FULL_VIEW`, answered as an alert like any refusal).

Reactions (``reactions_for_approval``) count only on cards still open in the
:class:`~channels.common.card_index.CardIndex` and get no private answer (Telegram has none for
reactions), with one exception: an approve reaction on a card that was shown cut, from someone
who may decide, is not reported (a card that hid part of the request cannot approve it) and
gets :attr:`~bot.channel.ClickVerdict.NEEDS_FULL_VIEW`'s message as a reply to the card. A
reaction on a full-view message counts as chosen on the full view.

When approver roles are configured the clicker's chat member status (``creator``,
``administrator``, ``member``, ...) is looked up and passed as their role.
"""

from __future__ import annotations

import structlog
from telegram import Bot, CallbackQuery, Message, MessageReactionUpdated
from telegram.error import TelegramError

from bot.channel import (
    ApprovalChoice,
    ApprovalClick,
    CardState,
    ChannelHost,
    ClickVerdict,
    SentMessage,
)
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.normalise import message_key, reaction_choice
from channels.telegram.outbound import TelegramOutbound

log = structlog.get_logger(__name__)

REPLY_HINT = "Reply to this card with the text to send instead."
FULL_VIEW_HINT = "The full request follows as a reply to the card; decide there."


class ApprovalTaps:
    """Turns taps and reactions on approval cards into host calls and answers."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        bot: Bot,
        outbound: TelegramOutbound,
    ) -> None:
        self._ref = ref
        self._config = config
        self._bot = bot
        self._outbound = outbound

    async def roles(self, chat_id: int, user_id: int) -> tuple[str, ...]:
        """The clicker's member status in the chat (``creator``, ``administrator``, ...), asked
        only when approver roles are configured."""
        if not self._config.approver_roles:
            return ()
        try:
            member = await self._bot.get_chat_member(chat_id=chat_id, user_id=user_id)
        except TelegramError as exc:
            log.warning("telegram_member_lookup_failed", channel=str(self._ref), error=exc.message)
            return ()
        return (str(member.status),)

    async def on_callback(self, query: CallbackQuery, host: ChannelHost) -> None:
        """Report an approval button tap and answer it: an alert unless it was accepted."""
        chat_id = query.message.chat.id if query.message is not None else query.from_user.id
        show_full = self._outbound.codec.show_full_request(query.data)
        if show_full is not None:
            await self._show_full(query, show_full, chat_id, host)
            return
        reply_to = self._outbound.codec.reply_request(query.data)
        if reply_to is not None:
            refused = await host.approval_refusal(
                channel=self._ref,
                approval_id=reply_to,
                user_id=str(query.from_user.id),
                user_roles=await self.roles(chat_id, query.from_user.id),
            )
            if refused is not None:
                log.info(
                    "telegram_reply_refused",
                    channel=str(self._ref),
                    approval_id=reply_to,
                    verdict=str(refused),
                )
            hint = REPLY_HINT if refused is None else refused.message
            await self._answer_text(query.id, hint, alert=True)
            return
        decoded = self._outbound.codec.decode(query.data)
        if decoded is None:
            await self._answer_text(query.id, None, alert=False)
            return
        approval_id = decoded.approval_id
        click = ApprovalClick(
            channel=self._ref,
            approval_id=approval_id,
            choice=decoded.choice,
            user_id=str(query.from_user.id),
            user_roles=await self.roles(chat_id, query.from_user.id),
            card=self._tapped_card(query, approval_id),
            full_view=decoded.full_view,
        )
        verdict = await host.approval_clicked(click)
        log.info(
            "telegram_approval_click",
            channel=str(self._ref),
            approval_id=approval_id,
            choice=str(decoded.choice),
            full_view=decoded.full_view,
            verdict=str(verdict),
        )
        await self._answer_text(
            query.id, verdict.message, alert=verdict is not ClickVerdict.ACCEPTED
        )

    async def _show_full(
        self, query: CallbackQuery, approval_id: str, chat_id: int, host: ChannelHost
    ) -> None:
        """Post the full view of ``approval_id`` for a tapper who may decide it."""
        refused = await host.approval_refusal(
            channel=self._ref,
            approval_id=approval_id,
            user_id=str(query.from_user.id),
            user_roles=await self.roles(chat_id, query.from_user.id),
        )
        card = None
        if refused is None:
            card = await host.approval_card(channel=self._ref, approval_id=approval_id)
            if card is None or card.state is CardState.EXPIRED:
                refused = ClickVerdict.UNKNOWN
            elif card.state is not CardState.PENDING:
                refused = ClickVerdict.ALREADY_DECIDED
        if refused is not None or card is None:
            verdict = refused or ClickVerdict.UNKNOWN
            log.info(
                "telegram_full_view_refused",
                channel=str(self._ref),
                approval_id=approval_id,
                verdict=str(verdict),
            )
            await self._answer_text(query.id, verdict.message, alert=True)
            return
        # Answered first: posting several messages or a file may take longer than a tapper
        # should wait for the spinner to stop.
        await self._answer_text(query.id, FULL_VIEW_HINT, alert=False)
        try:
            await self._outbound.post_full_view(self._full_view_target(query), card)
        except ChannelError as exc:
            log.warning(
                "telegram_full_view_failed",
                channel=str(self._ref),
                approval_id=approval_id,
                error=str(exc),
            )

    def _full_view_target(self, query: CallbackQuery) -> DeliveryTarget:
        """Where the full view goes: a reply to the tapped card, in its topic; the tapper's
        private chat when Telegram did not say which message was tapped."""
        shown = query.message
        if shown is None:
            return DeliveryTarget(channel=self._ref, conversation_id=str(query.from_user.id))
        thread = (
            shown.message_thread_id
            if isinstance(shown, Message) and shown.is_topic_message
            else None
        )
        return DeliveryTarget(
            channel=self._ref,
            conversation_id=str(shown.chat.id),
            thread_id=str(thread) if thread is not None else None,
            reply_to_message_id=message_key(shown.chat.id, shown.message_id),
        )

    def _tapped_card(self, query: CallbackQuery, approval_id: str) -> SentMessage | None:
        """The tapped card, if its message still shows this approval's buttons: a tap from a
        stale screen on a card already edited carries the message without them."""
        shown = query.message
        if not isinstance(shown, Message):
            return None
        if self._outbound.codec.approval_in(shown.reply_markup) != approval_id:
            return None
        return self._outbound.card_message(shown.chat.id, shown.message_id)

    async def _answer_text(self, query_id: str, text: str | None, *, alert: bool) -> None:
        try:
            await self._bot.answer_callback_query(query_id, text=text, show_alert=alert)
        except TelegramError as exc:  # e.g. "query is too old": the click still counted
            log.warning(
                "telegram_answer_callback_failed", channel=str(self._ref), error=exc.message
            )

    async def on_reaction(self, reaction: MessageReactionUpdated, host: ChannelHost) -> None:
        """Report an approve/deny reaction on a card that still offers buttons."""
        choice = reaction_choice(reaction)
        if choice is None or reaction.user is None:
            return
        card = await self._outbound.cards.find(reaction.chat.id, reaction.message_id)
        if card is None or not card.open:
            return
        approval_id = card.approval_id
        roles = await self.roles(reaction.chat.id, reaction.user.id)
        if choice is ApprovalChoice.APPROVE and card.cut and not card.full_view:
            refused = await host.approval_refusal(
                channel=self._ref,
                approval_id=approval_id,
                user_id=str(reaction.user.id),
                user_roles=roles,
            )
            if refused is None:  # would count, but the card hid part of the request
                await self._needs_full_view(reaction, card.thread_id, approval_id)
                return
        click = ApprovalClick(
            channel=self._ref,
            approval_id=approval_id,
            choice=choice,
            user_id=str(reaction.user.id),
            user_roles=roles,
            card=self._outbound.card_message(reaction.chat.id, reaction.message_id),
            full_view=card.full_view,
        )
        verdict = await host.approval_clicked(click)
        # A reaction has no private answer on Telegram; the card edit shows accepted ones.
        log.info(
            "telegram_approval_reaction",
            channel=str(self._ref),
            approval_id=approval_id,
            choice=str(choice),
            verdict=str(verdict),
        )

    async def _needs_full_view(
        self, reaction: MessageReactionUpdated, thread_id: str | None, approval_id: str
    ) -> None:
        """Tell an approver, as a reply to the cut card, to approve from the full view."""
        log.info(
            "telegram_approval_reaction",
            channel=str(self._ref),
            approval_id=approval_id,
            choice=str(ApprovalChoice.APPROVE),
            verdict=str(ClickVerdict.NEEDS_FULL_VIEW),
        )
        target = DeliveryTarget(
            channel=self._ref,
            conversation_id=str(reaction.chat.id),
            thread_id=thread_id,
            reply_to_message_id=message_key(reaction.chat.id, reaction.message_id),
        )
        try:
            await self._outbound.send(target, ClickVerdict.NEEDS_FULL_VIEW.message)
        except ChannelError as exc:
            log.warning("telegram_reaction_answer_failed", channel=str(self._ref), error=str(exc))
