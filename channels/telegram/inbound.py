"""Where each Telegram update goes: the one routing point for inbound updates.

- a new message becomes an envelope (:func:`~channels.telegram.normalise.normalise_message`)
  for the host, unless it is a reply to an approval card, which
  :class:`~channels.telegram.card_surface.TelegramCardAnswers` consumes;
- an edited message (``edited_message``) is normalised exactly as a new one, with the same
  ``message_id``, and reported with :meth:`~bot.channel.ChannelHost.edited`: the host replaces
  the text of a message whose turn has not started, admits one it never had (an edit that
  adds the bot's mention is answered) and leaves a started turn alone. The same rules as for
  a new message apply: the bot's own messages, channel posts (``edited_channel_post`` is not
  asked for) and empty messages give nothing. An edit of a reply to an approval card is
  dropped: the reply was consumed as an answer, never admitted, and must not become a
  question for the agent. Telegram also sends ``edited_message`` for changes the bot cannot
  see (PTB's ``Update.edited_message``), so an edit may carry the text unchanged;
- a callback query is an approval tap, a message reaction an approval reaction
  (:class:`~channels.telegram.card_surface.TelegramCardAnswers`, reactions only with
  ``reactions_for_approval``);
- anything else is logged and dropped.

Deleted messages cause no update at all (see :mod:`channels.telegram.adapter`).

Envelopes carry no roles (:attr:`bot.envelope.Sender.roles` is empty): an update says
nothing of its sender's status in the chat, and looking it up would cost a ``getChatMember``
call per message. ``approver_roles`` (``administrator``, ``creator``) therefore count on
approval cards only, where the tapper's status is looked up once per tap
(:class:`~channels.telegram.card_surface.TelegramCardAnswers`); outside a card an approver is one
listed by id.

An update whose payload cannot be read is skipped; what the host raises propagates, so the
update is not marked as done and comes again after a restart (an edit as well as a new
message: the offset advances only after the host returned).
"""

from __future__ import annotations

import structlog
from telegram import Message, Update

from bot.channel import ChannelHost
from bot.envelope import Capabilities, ChannelRef, IngressEnvelope
from channels.telegram.addressing import BotIdentity
from channels.telegram.card_surface import TelegramCardAnswers
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.markup import TELEGRAM_LIMIT
from channels.telegram.normalise import normalise_message
from channels.telegram.replied import RepliedMessages

log = structlog.get_logger(__name__)


def capabilities_for(config: TelegramChannelConfig) -> Capabilities:
    return Capabilities(
        can_edit=True,
        can_react=True,
        inline_buttons=True,
        typing=True,
        max_message_chars=TELEGRAM_LIMIT,
        approval_backchannel=bool(config.approvers or config.approver_roles),
        terminal_prompt=False,
    )


def allowed_updates(config: TelegramChannelConfig) -> list[str]:
    """The update kinds asked of ``getUpdates`` / ``setWebhook``; Telegram keeps none of the
    others, so a kind missing here is lost for good, not merely postponed."""
    kinds = [Update.MESSAGE, Update.EDITED_MESSAGE, Update.CALLBACK_QUERY]
    if config.reactions_for_approval:
        kinds.append(Update.MESSAGE_REACTION)
    return kinds


class UpdateRouter:
    """Hands one update to the host, the card replies or the approval taps.

    ``me`` is the bot's identity, set by the channel once ``getMe`` answered."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        cards: TelegramCardAnswers,
    ) -> None:
        self._ref = ref
        self._config = config
        self._cards = cards
        self.me = BotIdentity(id=0, username="")
        #: what each recent message replied to, for the turn that answers it
        self.replied = RepliedMessages()

    async def route(self, update: Update, host: ChannelHost) -> None:
        if update.message is not None:
            envelope = self._envelope(update.message, update.update_id)
            if envelope is None:
                return
            self.replied.note(envelope, update.message, self.me)
            if not await self._cards.consume(update.message, envelope, self.me, host):
                await host.deliver(envelope)
        elif update.edited_message is not None:
            await self._edited(update.edited_message, update.update_id, host)
        elif update.callback_query is not None:
            await self._cards.on_callback(update.callback_query, host)
        elif update.message_reaction is not None:
            if self._config.reactions_for_approval:
                await self._cards.on_reaction(update.message_reaction, host)
        else:
            log.debug("telegram_update_ignored", channel=str(self._ref), update_id=update.update_id)

    async def _edited(self, message: Message, update_id: int, host: ChannelHost) -> None:
        envelope = self._envelope(message, update_id)
        if envelope is None:
            return
        if await self._cards.replies_to_card(message, self.me):
            log.info(
                "telegram_card_reply_edit_ignored", channel=str(self._ref), update_id=update_id
            )
            return
        await host.edited(envelope)

    def _envelope(self, message: Message, update_id: int) -> IngressEnvelope | None:
        """The envelope of a new or edited message; None when it is not one to hand over."""
        try:
            return normalise_message(
                message, ref=self._ref, me=self.me, capabilities=capabilities_for(self._config)
            )
        except Exception:
            # A payload we cannot read is skipped (and its offset confirmed): retrying it
            # after a restart would fail the same way, forever.
            log.exception("telegram_update_unreadable", channel=str(self._ref), update_id=update_id)
            return None
