"""The message a Telegram mention replies to: the Telegram channel's
:class:`~bot.channel.RepliedTo`.

Telegram gives bots no history to read: a mention in a reply chain or a forum topic gets the
kept group context (which a bot sees only with privacy mode off or as an administrator) and
the one message it replies to, as Telegram sends it inside the update
(``reply_to_message``). The router notes that message as the update arrives
(:meth:`RepliedMessages.note`, in memory, the newest :data:`CAPACITY`); the turn asks for it
by its message. A reply to the bot's own message, or to a forum topic's opening service
message, gives nothing: the bot's answer is in the session's history.
"""

from __future__ import annotations

from collections import OrderedDict

from telegram import Message

from bot.channel import EarlierMessage
from bot.envelope import IngressEnvelope, Sender
from channels.telegram.addressing import BotIdentity
from channels.telegram.normalise import message_key

CAPACITY = 1024


class RepliedMessages:
    """The replied-to message of recent messages, by the replying message's envelope id."""

    def __init__(self) -> None:
        self._replied: OrderedDict[str, EarlierMessage] = OrderedDict()

    def note(self, envelope: IngressEnvelope, message: Message, me: BotIdentity) -> None:
        """Keep what ``message`` (the envelope's) replies to, when it is someone's text."""
        replied = message.reply_to_message
        if replied is None or replied.from_user is None or replied.from_user.id == me.id:
            return
        text = replied.text or replied.caption or ""
        if not text or replied.forum_topic_created is not None:
            return
        user = replied.from_user
        self._replied[envelope.message_id] = EarlierMessage(
            message_id=message_key(replied.chat.id, replied.message_id),
            sender=Sender(id=str(user.id), display_name=user.full_name, is_bot=user.is_bot),
            text=text,
            at=replied.date.timestamp(),
        )
        if len(self._replied) > CAPACITY:
            self._replied.popitem(last=False)

    def replied_to(self, envelope: IngressEnvelope) -> EarlierMessage | None:
        return self._replied.get(envelope.message_id)
