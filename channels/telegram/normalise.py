"""Telegram payloads → hatchway values, as pure functions over python-telegram-bot objects.

Contracts:

- :func:`normalise_message` turns one new (or edited) message into a complete
  :class:`IngressEnvelope`, or ``None`` when the message is not one to answer (the bot's own
  messages, service messages without text or media, channel posts). Other bots' messages are
  kept with ``is_bot=True``; the gateway drops them.
- ``message_id`` is ``"{chat_id}:{message_id}"`` because Telegram numbers messages per chat.
  :func:`parse_message_id` accepts that form or a bare message number.
- Chat commands (``/stop``, ``/stop@thisbot``, ``/STOP``) become ``/stop`` and count as
  addressed in groups; ``/stop@otherbot`` is left as typed and not addressed
  (:mod:`channels.telegram.commands`). Mentions and replies: :mod:`channels.telegram.addressing`.
- Forum topics: ``message_thread_id`` becomes ``thread_id`` (only for topic messages; reply
  chains in ordinary groups also carry the field and are not threads), and the reply target
  keeps it so the answer lands in the same topic.
- Approval buttons, reactions and replies on cards are :mod:`channels.telegram.card_surface`'s.
"""

from __future__ import annotations

from telegram import Message
from telegram.constants import ChatType

from bot.envelope import (
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from channels.telegram.addressing import BotIdentity, mentions_bot, replies_to_bot, strip_mention
from channels.telegram.commands import typed_command
from channels.telegram.media import attachments_of


def message_key(chat_id: int | str, message_id: int | str) -> str:
    return f"{chat_id}:{message_id}"


def parse_message_id(value: str) -> int:
    """The Telegram message number of ``"{chat}:{message}"`` or of a bare ``"{message}"``."""
    return int(value.rsplit(":", 1)[-1])


def thread_of(message: Message) -> int | None:
    """The forum topic of ``message``, or ``None`` outside forum topics."""
    return message.message_thread_id if message.is_topic_message else None


def _display_name(message: Message) -> str:
    user = message.from_user
    if user is None:
        return ""
    return user.full_name or (f"@{user.username}" if user.username else str(user.id))


def _text_and_addressing(message: Message, text: str, me: BotIdentity) -> tuple[str, bool]:
    """The text the gateway gets, and whether a group message is addressed to the bot.

    A command of ours is normalised (``/stop@thisbot`` → ``/stop``) and a plain chat command
    counts as addressed; ``/cmd@otherbot`` is another bot's and never addressed to us."""
    command = typed_command(message, me)
    if command is not None and not command.for_us:
        return strip_mention(text, me), False
    named = mentions_bot(message, me) or replies_to_bot(message, me)
    if command is not None:
        return command.text, command.addressed or named
    return strip_mention(text, me), named


def normalise_message(
    message: Message, *, ref: ChannelRef, me: BotIdentity, capabilities: Capabilities
) -> IngressEnvelope | None:
    """The envelope for a new message, or ``None`` if it is not one to hand to the gateway.
    An edited message gives the envelope it would give had it been sent as it reads now."""
    user = message.from_user
    if user is None or user.id == me.id:
        return None
    chat = message.chat
    if chat.type == ChatType.CHANNEL:
        return None
    text = message.text or message.caption or ""
    attachments = attachments_of(message)
    if not text and not attachments:
        return None
    is_direct = chat.type == ChatType.PRIVATE
    thread = thread_of(message)
    thread_id = str(thread) if thread is not None else None
    conversation_id = str(chat.id)
    text, addressed = _text_and_addressing(message, text, me)
    return IngressEnvelope(
        channel=ref,
        message_id=message_key(chat.id, message.message_id),
        conversation_id=conversation_id,
        thread_id=thread_id,
        sender=Sender(id=str(user.id), display_name=_display_name(message), is_bot=user.is_bot),
        text=text,
        attachments=attachments,
        is_direct=is_direct,
        is_group=chat.type in (ChatType.GROUP, ChatType.SUPERGROUP),
        addressed_to_bot=is_direct or addressed,
        reply_target=DeliveryTarget(
            channel=ref,
            conversation_id=conversation_id,
            thread_id=thread_id,
            reply_to_message_id=None if is_direct else str(message.message_id),
        ),
        capabilities=capabilities,
        # a group's title, as the update gives it (a private chat has none)
        conversation_title="" if is_direct else (chat.title or ""),
    )
