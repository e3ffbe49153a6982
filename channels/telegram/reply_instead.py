"""Deny with a reply on Telegram: a reply to an approval card answers the approval.

Telegram has no modals, so the design's "a reply to the card" is the way in. A message that
replies to one of the bot's approval cards (found through the
:class:`~channels.common.card_index.CardIndex`, or, for a card the index missed, through the
approval id in the card's own inline keyboard) is consumed here and never reaches the agent:

- with text, it is reported as :class:`~bot.channel.ApprovalClick` ``DENY`` carrying the text
  as ``replacement_text``; the host decides as for any click (approvers only, no self-approval
  unless allowed, single use). Accepted: the reply gets a 👍 reaction and the approval service
  edits the card to "✏️ Denied with a reply". Otherwise the verdict's message is sent as a
  short reply (Telegram has no private answers), and the approval service edits the card
  replied to to its outcome if the request is no longer open;
- without text (blank, or media without a caption), it changes nothing: the sender is told to
  reply with the text (:data:`EMPTY_REPLY`). An accidental sticker must not deny a call.

The text is the message's text or caption with the bot's ``@username`` removed, as the agent
would have seen it. The approval service scrubs secrets; the pipeline bounds its length.
Replies from other bots are consumed and ignored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
from telegram import Message

from bot.channel import ApprovalChoice, ApprovalClick, ChannelHost, ClickVerdict
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope
from bot.errors import ChannelError
from channels.common.card_index import CardEntry
from channels.telegram.addressing import BotIdentity, replies_to_bot
from channels.telegram.outbound import TelegramOutbound

log = structlog.get_logger(__name__)

EMPTY_REPLY = "Nothing changed: reply to the card with the text the assistant should be told."
ACCEPTED_REACTION = "👍"

#: ``(chat_id, user_id) → roles`` of a member, as the taps look them up.
RoleLookup = Callable[[int, int], Awaitable[tuple[str, ...]]]


class CardReplies:
    """Consumes replies to approval cards and reports them as deny-with-edit."""

    def __init__(self, *, ref: ChannelRef, outbound: TelegramOutbound, roles: RoleLookup) -> None:
        self._ref = ref
        self._outbound = outbound
        self._roles = roles

    async def _card_replied_to(self, message: Message, me: BotIdentity) -> CardEntry | None:
        """The card ``message`` replies to, or ``None``."""
        replied = message.reply_to_message
        if replied is None or not replies_to_bot(message, me):
            return None
        entry = await self._outbound.cards.find(replied.chat.id, replied.message_id)
        if entry is not None:
            return entry
        approval_id = self._outbound.codec.approval_in(replied.reply_markup)
        return CardEntry(approval_id=approval_id) if approval_id else None

    async def replies_to_card(self, message: Message, me: BotIdentity) -> bool:
        """Whether ``message`` replies to an approval card (so it was, or is, an answer)."""
        return await self._card_replied_to(message, me) is not None

    async def consume(
        self, message: Message, envelope: IngressEnvelope, me: BotIdentity, host: ChannelHost
    ) -> bool:
        """Handle ``message`` if it replies to an approval card; True when it was consumed
        (the caller must then not deliver it)."""
        replied = message.reply_to_message
        card = await self._card_replied_to(message, me)
        if replied is None or card is None:
            return False
        if envelope.sender.is_bot:
            log.info("telegram_card_reply_from_bot_ignored", channel=str(self._ref))
            return True
        answer_to = DeliveryTarget(
            channel=self._ref,
            conversation_id=envelope.conversation_id,
            thread_id=envelope.thread_id,
            reply_to_message_id=str(message.message_id),
        )
        text = envelope.text.strip()
        if not text:
            await self._say(answer_to, EMPTY_REPLY)
            return True
        click = ApprovalClick(
            channel=self._ref,
            approval_id=card.approval_id,
            choice=ApprovalChoice.DENY,
            user_id=envelope.sender.id,
            user_roles=await self._roles(message.chat.id, int(envelope.sender.id)),
            replacement_text=text,
            card=self._outbound.card_message(replied.chat.id, replied.message_id),
        )
        verdict = await host.approval_clicked(click)
        log.info(
            "telegram_approval_reply",
            channel=str(self._ref),
            approval_id=card.approval_id,
            verdict=str(verdict),
            chars=len(text),
        )
        if verdict is ClickVerdict.ACCEPTED:
            await self._outbound.react(answer_to, envelope.message_id, ACCEPTED_REACTION)
            return True
        await self._say(answer_to, verdict.message)
        return True

    async def _say(self, target: DeliveryTarget, text: str) -> None:
        try:
            await self._outbound.send(target, text)
        except ChannelError as exc:  # the reply is consumed either way; nothing was decided
            log.warning("telegram_card_reply_answer_failed", channel=str(self._ref), error=str(exc))
