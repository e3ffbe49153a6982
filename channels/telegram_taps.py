"""Approval taps on Telegram: inline-keyboard button presses and reactions on cards.

A tap is decoded (:class:`~channels.telegram_normalise.CallbackCodec`), reported to the host
as an :class:`~bot.channel.ApprovalClick`, and answered with ``answerCallbackQuery``: silently
with "Recorded." when accepted, as an alert with the verdict's message otherwise (not
authorised, own request, already decided, expired). The adapter decides nothing; the host's
verdict is the answer. A tap is reported with the tapped card
(:attr:`~bot.channel.ApprovalClick.card`) when that message still offers this approval's
buttons; the approval service then edits it to its outcome if the request is no longer open
(a card whose place it never stored, after a crash right after posting, included).

The "✏️ Reply instead" button decides nothing: its answer says how to deny with a reply
(:mod:`channels.telegram_replies`), to a tapper the host says may decide
(:meth:`~bot.channel.ChannelHost.approval_refusal`); anyone else gets the alert a refused tap
gets. The reply itself is still decided when it arrives.

Reactions (``reactions_for_approval``) count only on cards still open in the
:class:`~channels.card_index.CardIndex` and get no private answer (Telegram has none for
reactions).

When approver roles are configured the clicker's chat member status (``creator``,
``administrator``, ``member``, ...) is looked up and passed as their role.
"""

from __future__ import annotations

import structlog
from telegram import Bot, CallbackQuery, Message, MessageReactionUpdated
from telegram.error import TelegramError

from bot.channel import ApprovalClick, ChannelHost, ClickVerdict, SentMessage
from bot.config import TelegramChannelConfig
from bot.envelope import ChannelRef
from channels.telegram_normalise import reaction_choice
from channels.telegram_outbound import TelegramOutbound

log = structlog.get_logger(__name__)

REPLY_HINT = "Reply to this card with the text to send instead."


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
        approval_id, choice = decoded
        click = ApprovalClick(
            channel=self._ref,
            approval_id=approval_id,
            choice=choice,
            user_id=str(query.from_user.id),
            user_roles=await self.roles(chat_id, query.from_user.id),
            card=self._tapped_card(query, approval_id),
        )
        verdict = await host.approval_clicked(click)
        log.info(
            "telegram_approval_click",
            channel=str(self._ref),
            approval_id=approval_id,
            choice=str(choice),
            verdict=str(verdict),
        )
        await self._answer_text(
            query.id, verdict.message, alert=verdict is not ClickVerdict.ACCEPTED
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
        click = ApprovalClick(
            channel=self._ref,
            approval_id=approval_id,
            choice=choice,
            user_id=str(reaction.user.id),
            user_roles=await self.roles(reaction.chat.id, reaction.user.id),
            card=self._outbound.card_message(reaction.chat.id, reaction.message_id),
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
