"""Where each Telegram update goes: the one routing point for inbound updates.

- a new message becomes an envelope (:func:`~channels.telegram.normalise.normalise_message`)
  for the host, unless it is a reply to an approval card, which
  :class:`~channels.telegram.reply_instead.CardReplies` consumes;
- a callback query is an approval tap, a message reaction an approval reaction
  (:class:`~channels.telegram.card_answers.ApprovalTaps`, reactions only with
  ``reactions_for_approval``);
- anything else (edited messages on purpose: answering an edit would answer twice) is logged
  and dropped.

An update whose payload cannot be read is skipped; what the host raises propagates, so the
update is not marked as done and comes again after a restart.
"""

from __future__ import annotations

import structlog
from telegram import Update

from bot.channel import ChannelHost
from bot.envelope import Capabilities, ChannelRef
from channels.telegram.addressing import BotIdentity
from channels.telegram.card_answers import ApprovalTaps
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.markup import TELEGRAM_LIMIT
from channels.telegram.normalise import normalise_message
from channels.telegram.reply_instead import CardReplies

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
    kinds = [Update.MESSAGE, Update.CALLBACK_QUERY]
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
        taps: ApprovalTaps,
        replies: CardReplies,
    ) -> None:
        self._ref = ref
        self._config = config
        self._taps = taps
        self._replies = replies
        self.me = BotIdentity(id=0, username="")

    async def route(self, update: Update, host: ChannelHost) -> None:
        if update.message is not None:
            try:
                envelope = normalise_message(
                    update.message,
                    ref=self._ref,
                    me=self.me,
                    capabilities=capabilities_for(self._config),
                )
            except Exception:
                # A payload we cannot read is skipped (and its offset confirmed): retrying it
                # after a restart would fail the same way, forever.
                log.exception(
                    "telegram_update_unreadable", channel=str(self._ref), update_id=update.update_id
                )
                return
            if envelope is None:
                return
            if not await self._replies.consume(update.message, envelope, self.me, host):
                await host.deliver(envelope)
        elif update.callback_query is not None:
            await self._taps.on_callback(update.callback_query, host)
        elif update.message_reaction is not None:
            if self._config.reactions_for_approval:
                await self._taps.on_reaction(update.message_reaction, host)
        else:
            log.debug(
                "telegram_update_ignored",
                channel=str(self._ref),
                update_id=update.update_id,
                edited=update.edited_message is not None,
            )
