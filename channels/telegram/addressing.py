"""Whom a Telegram message is for: the bot's identity and the ways a group message reaches it.

A group message is addressed to the bot when it mentions ``@username`` (text or caption,
case-insensitive), mentions the bot through a text mention, carries a ``/command@username``,
or replies to one of the bot's own messages; a chat command at the start of a message has
its own rules (:mod:`channels.telegram.commands`). :func:`strip_mention` removes the
bot's ``@username`` from the text the model sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from telegram import Message, MessageEntity


@dataclass(frozen=True, slots=True, kw_only=True)
class BotIdentity:
    """Who the bot is, from ``getMe``: used to ignore itself and to recognise mentions."""

    id: int
    username: str


def mentions_bot(message: Message, me: BotIdentity) -> bool:
    """True when ``message`` names the bot: ``@username``, a text mention, ``/cmd@username``."""
    wanted = f"@{me.username}".lower()
    kinds: list[str | None] = [
        MessageEntity.MENTION,
        MessageEntity.TEXT_MENTION,
        MessageEntity.BOT_COMMAND,
    ]
    found = [
        (entity, entity_text(source, entity))
        for source, entities in (
            (message.text, message.entities),
            (message.caption, message.caption_entities),
        )
        if source
        for entity in entities
        if entity.type in kinds
    ]
    for entity, text in found:
        if entity.type == MessageEntity.TEXT_MENTION:
            if entity.user is not None and entity.user.id == me.id:
                return True
        elif entity.type == MessageEntity.BOT_COMMAND:
            if text.lower().endswith(wanted):
                return True
        elif text.lower() == wanted:
            return True
    return False


def entity_text(text: str, entity: MessageEntity) -> str:
    """The part of ``text`` that ``entity`` marks, as Telegram counts it (UTF-16 code units).

    python-telegram-bot's ``parse_entity`` decodes strictly, so an entity whose bounds fall
    inside a surrogate pair (which Telegram never sends, but a payload may hold) raised
    ``UnicodeDecodeError`` out of the adapter; a half character here becomes U+FFFD instead.
    """
    units = text.encode("utf-16-le")
    start = entity.offset * 2
    return units[start : start + entity.length * 2].decode("utf-16-le", errors="replace")


def replies_to_bot(message: Message, me: BotIdentity) -> bool:
    """True when ``message`` is a reply to one of the bot's own messages."""
    replied = message.reply_to_message
    if replied is None or replied.from_user is None:
        return False
    # In forum topics every message "replies" to the topic's creation message; that is not
    # a reply to the bot unless the bot's own message is the one replied to.
    if message.is_topic_message and replied.forum_topic_created is not None:
        return False
    return replied.from_user.id == me.id


def strip_mention(text: str, me: BotIdentity) -> str:
    """Remove ``@botname`` from the text (also from ``/command@botname``)."""
    if not me.username:
        return text
    lowered = text.lower()
    needle = f"@{me.username}".lower()
    out: list[str] = []
    start = 0
    while (idx := lowered.find(needle, start)) != -1:
        end = idx + len(needle)
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            out.append(text[start:end])
        else:
            out.append(text[start:idx])
        start = end
    out.append(text[start:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()
