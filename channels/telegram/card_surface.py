"""Answers on approval cards on Telegram: button taps, reactions and replies, reported to the
core as :class:`~bot.cards.CardAction` values and answered through a
:class:`~bot.cards.CardSurface`. Nothing here decides what an answer means.

- **Taps** (inline keyboard): the callback data is read by the core's
  :class:`~bot.cards.ButtonCodec` (data of another format version gets a polite alert, data
  that is not ours a silent answer). Every tap is answered with ``answerCallbackQuery``:
  silently with "Recorded." when accepted, as an alert otherwise. "✏️ Reply instead" is
  answered with how to reply (:data:`REPLY_HINT`); "🔎 Show full and decide" with
  :data:`FULL_VIEW_HINT`, and the full view is posted as a reply to the card
  (:meth:`~channels.telegram.outbound.TelegramOutbound.post_full_view`). A tap names the
  tapped card (:attr:`~bot.cards.CardAction.card`) when that message still shows this
  approval's buttons, so the core edits it to the outcome of a request no longer open.
- **Reactions** (``reactions_for_approval``; :data:`APPROVE_REACTIONS`,
  :data:`DENY_REACTIONS`) count only on cards still open in the
  :class:`~channels.common.card_index.CardIndex`, as chosen on a full view when they are on
  one. Telegram has no private answer to a reaction: the card edit shows an accepted one,
  and the one answer the edit cannot show — approve from the full view — is sent as a reply
  to the card.
- **Replies** to a card (found in the card index, or through the approval id in the card's
  own keyboard) are consumed and never reach the agent: with text, a reply instead (the
  text as the agent would have seen it, the bot's ``@username`` removed); accepted gets a 👍
  reaction, anything else the verdict as a short reply. A reply without text (blank, a
  sticker, media without a caption) changes nothing (:data:`EMPTY_REPLY`): an accidental
  sticker must not deny a call. Replies from other bots are consumed and ignored.

When approver roles are configured the actor's chat member status (``creator``,
``administrator``, ``member``, ...) is looked up and passed as their role.
"""

from __future__ import annotations

import structlog
from telegram import (
    Bot,
    CallbackQuery,
    Message,
    MessageReactionUpdated,
    ReactionTypeEmoji,
    User,
)
from telegram.error import TelegramError

from bot.cards import (
    UNREADABLE_BUTTON,
    Actor,
    ApprovalCard,
    Button,
    CardAction,
    CardReply,
    CardReplyKind,
    CardVerb,
    ClickVerdict,
)
from bot.channel import ChannelHost
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, SentMessage
from bot.errors import ChannelError
from channels.common.card_index import CardEntry
from channels.telegram.addressing import BotIdentity, replies_to_bot
from channels.telegram.cards import approval_in, fit_card
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.normalise import message_key
from channels.telegram.outbound import TelegramOutbound

log = structlog.get_logger(__name__)

REPLY_HINT = "Reply to this card with the text to send instead."
FULL_VIEW_HINT = "The full request follows as a reply to the card; decide there."
EMPTY_REPLY = "Nothing changed: reply to the card with the text the assistant should be told."
ACCEPTED_REACTION = "👍"
APPROVE_REACTIONS = frozenset({"✅", "👍", "👌"})
DENY_REACTIONS = frozenset({"❌", "👎"})


def reaction_verb(update: MessageReactionUpdated) -> CardVerb | None:
    """The verb a newly added reaction expresses, if any."""
    old = {r.emoji for r in update.old_reaction if isinstance(r, ReactionTypeEmoji)}
    for reaction in update.new_reaction:
        if not isinstance(reaction, ReactionTypeEmoji) or reaction.emoji in old:
            continue
        emoji = reaction.emoji.replace("\ufe0f", "")
        if emoji in APPROVE_REACTIONS:
            return CardVerb.APPROVE
        if emoji in DENY_REACTIONS:
            return CardVerb.DENY
    return None


def shown_name(user: User) -> str:
    """How a card names ``user``: their first and last name, else their username."""
    return user.full_name or user.username or ""


class TelegramCardAnswers:
    """Reports taps, reactions and replies on approval cards and answers them."""

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

    async def _actor(self, chat_id: int, user_id: int, name: str) -> Actor:
        """The actor, named ``name`` (see :func:`shown_name`), with their member status in the
        chat as their role when approver roles are configured."""
        if not self._config.approver_roles:
            return Actor(user_id=str(user_id), name=name)
        try:
            member = await self._bot.get_chat_member(chat_id=chat_id, user_id=user_id)
        except TelegramError as exc:
            log.warning("telegram_member_lookup_failed", channel=str(self._ref), error=exc.message)
            return Actor(user_id=str(user_id), name=name)
        return Actor(user_id=str(user_id), roles=(str(member.status),), name=name)

    async def on_callback(self, query: CallbackQuery, host: ChannelHost) -> None:
        surface = _TapSurface(self._ref, self._bot, self._outbound, query)
        button = self._outbound.codec.unpack(query.data)
        if button is None:  # not an approval button: answered, silently
            await surface.answer(None, alert=False)
            return
        if not isinstance(button, Button):
            await surface.answer(UNREADABLE_BUTTON, alert=True)
            return
        chat_id = query.message.chat.id if query.message is not None else query.from_user.id
        action = CardAction(
            channel=self._ref,
            approval_id=button.approval_id,
            verb=button.verb,
            actor=await self._actor(chat_id, query.from_user.id, shown_name(query.from_user)),
            full_view=button.full_view,
            card=self._tapped_card(query, button.approval_id),
            grant_choice=button.grant_choice,
        )
        reply = await host.card_action(action, surface)
        log.info(
            "telegram_approval_click",
            channel=str(self._ref),
            approval_id=action.approval_id,
            verb=str(action.verb),
            full_view=action.full_view,
            verdict=str(reply.verdict),
        )

    def _tapped_card(self, query: CallbackQuery, approval_id: str) -> SentMessage | None:
        """The tapped card, if its message still shows this approval's buttons: a tap from a
        stale screen on a card already edited carries the message without them."""
        shown = query.message
        if not isinstance(shown, Message):
            return None
        if approval_in(shown.reply_markup, self._outbound.codec) != approval_id:
            return None
        return self._outbound.card_message(shown.chat.id, shown.message_id)

    async def on_reaction(self, reaction: MessageReactionUpdated, host: ChannelHost) -> None:
        """Report an approve/deny reaction on a card that still offers buttons."""
        verb = reaction_verb(reaction)
        if verb is None or reaction.user is None:
            return
        card = await self._outbound.cards.find(reaction.chat.id, reaction.message_id)
        if card is None or not card.open:
            return
        action = CardAction(
            channel=self._ref,
            approval_id=card.approval_id,
            verb=verb,
            actor=await self._actor(reaction.chat.id, reaction.user.id, shown_name(reaction.user)),
            full_view=card.full_view,
            card=self._outbound.card_message(reaction.chat.id, reaction.message_id),
        )
        where = DeliveryTarget(
            channel=self._ref,
            conversation_id=str(reaction.chat.id),
            thread_id=card.thread_id,
            reply_to_message_id=message_key(reaction.chat.id, reaction.message_id),
        )
        reply = await host.card_action(action, _ReactionSurface(self._outbound, where))
        log.info(
            "telegram_approval_reaction",
            channel=str(self._ref),
            approval_id=card.approval_id,
            verb=str(verb),
            verdict=str(reply.verdict),
        )

    # -- replies to a card ---------------------------------------------------------------

    async def _card_replied_to(self, message: Message, me: BotIdentity) -> CardEntry | None:
        """The card ``message`` replies to, or ``None``."""
        replied = message.reply_to_message
        if replied is None or not replies_to_bot(message, me):
            return None
        entry = await self._outbound.cards.find(replied.chat.id, replied.message_id)
        if entry is not None:
            return entry
        approval_id = approval_in(replied.reply_markup, self._outbound.codec)
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
        surface = _ReplySurface(self._outbound, envelope)
        text = envelope.text.strip()
        if not text:
            await surface.tell(CardReply(kind=CardReplyKind.TELL, note=EMPTY_REPLY))
            return True
        action = CardAction(
            channel=self._ref,
            approval_id=card.approval_id,
            verb=CardVerb.REPLY,
            actor=await self._actor(
                message.chat.id, int(envelope.sender.id), envelope.sender.display_name
            ),
            reply=text,
            card=self._outbound.card_message(replied.chat.id, replied.message_id),
        )
        reply = await host.card_action(action, surface)
        log.info(
            "telegram_approval_reply",
            channel=str(self._ref),
            approval_id=card.approval_id,
            verdict=str(reply.verdict),
            chars=len(text),
        )
        return True


def _shows_whole(card: ApprovalCard) -> bool:
    return not fit_card(card).card.cut


class _TapSurface:
    """Answers one callback query."""

    def __init__(
        self, ref: ChannelRef, bot: Bot, outbound: TelegramOutbound, query: CallbackQuery
    ) -> None:
        self._ref = ref
        self._bot = bot
        self._outbound = outbound
        self._query = query

    def shows_whole(self, card: ApprovalCard) -> bool:
        return _shows_whole(card)

    async def tell(self, reply: CardReply) -> None:
        await self.answer(reply.text or None, alert=reply.kind is not CardReplyKind.ACCEPTED)

    async def open_reply_form(self, approval_id: str) -> None:
        await self.answer(REPLY_HINT, alert=True)

    async def show_full(self, card: ApprovalCard) -> None:
        # Answered first: posting several messages or a file may take longer than a tapper
        # should wait for the spinner to stop.
        await self.answer(FULL_VIEW_HINT, alert=False)
        try:
            await self._outbound.post_full_view(self._full_view_target(), card)
        except ChannelError as exc:
            log.warning(
                "telegram_full_view_failed",
                channel=str(self._ref),
                approval_id=card.approval_id,
                error=str(exc),
            )

    def _full_view_target(self) -> DeliveryTarget:
        """Where the full view goes: a reply to the tapped card, in its topic; the tapper's
        private chat when Telegram did not say which message was tapped."""
        shown = self._query.message
        if shown is None:
            return DeliveryTarget(channel=self._ref, conversation_id=str(self._query.from_user.id))
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

    async def answer(self, text: str | None, *, alert: bool) -> None:
        try:
            await self._bot.answer_callback_query(self._query.id, text=text, show_alert=alert)
        except TelegramError as exc:  # e.g. "query is too old": the tap still counted
            log.warning(
                "telegram_answer_callback_failed", channel=str(self._ref), error=exc.message
            )


class _ReactionSurface:
    """Answers a reaction: only "approve from the full view", as a reply to the card."""

    def __init__(self, outbound: TelegramOutbound, card: DeliveryTarget) -> None:
        self._outbound = outbound
        self._card = card

    def shows_whole(self, card: ApprovalCard) -> bool:
        return _shows_whole(card)

    async def tell(self, reply: CardReply) -> None:
        if reply.verdict is not ClickVerdict.NEEDS_FULL_VIEW:
            return  # the card edit shows an accepted reaction; refusals are not told
        try:
            await self._outbound.send(self._card, reply.text)
        except ChannelError as exc:
            log.warning("telegram_reaction_answer_failed", error=str(exc))

    async def show_full(self, card: ApprovalCard) -> None:
        return None  # a reaction never asks for it

    async def open_reply_form(self, approval_id: str) -> None:
        return None  # a reaction never asks for it


class _ReplySurface:
    """Answers a reply to a card: 👍 when accepted, else a short reply."""

    def __init__(self, outbound: TelegramOutbound, envelope: IngressEnvelope) -> None:
        self._outbound = outbound
        self._envelope = envelope
        self._to = DeliveryTarget(
            channel=envelope.channel,
            conversation_id=envelope.conversation_id,
            thread_id=envelope.thread_id,
            reply_to_message_id=envelope.message_id.rsplit(":", 1)[-1],
        )

    def shows_whole(self, card: ApprovalCard) -> bool:
        return _shows_whole(card)

    async def tell(self, reply: CardReply) -> None:
        if reply.kind is CardReplyKind.ACCEPTED:
            await self._outbound.react(self._to, self._envelope.message_id, ACCEPTED_REACTION)
            return
        try:
            await self._outbound.send(self._to, reply.text)
        except ChannelError as exc:  # the reply is consumed either way; nothing was decided
            log.warning("telegram_card_reply_answer_failed", error=str(exc))

    async def show_full(self, card: ApprovalCard) -> None:
        return None  # a reply never asks for it

    async def open_reply_form(self, approval_id: str) -> None:
        return None  # a reply never asks for it
