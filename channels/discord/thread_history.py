"""A thread or reply chain read back from Discord: the channel's
:class:`~bot.channel.ThreadHistory`.

Mentioned in a thread, the bot reads the thread channel's messages before the mention with
discord.py's REST history (``GET /channels/{thread}/messages?before=…``, newest first, at most
``limit``) and keeps those before its own first message among them. Mentioned in a reply to
another message outside a thread, it follows the chain of message references (each message
fetched once, ``GET /channels/{id}/messages/{id}``) up to ``limit`` messages. Either way at
most ``max_chars`` characters, the newest kept, text made readable as a live message's is
(:func:`~channels.discord.normalise.clean_text`). Rate limits are discord.py's: it waits out a
429's ``retry_after`` itself. A failed read is None (the turn goes on without it).
"""

from __future__ import annotations

from collections.abc import Sequence

import aiohttp
import discord
import structlog

from bot.channel import EarlierMessage
from bot.envelope import IngressEnvelope, Sender
from channels.discord.client import Connection
from channels.discord.normalise import MessageFacts, clean_text

log = structlog.get_logger(__name__)

#: How long a read waits for the bot to be logged in.
LOGIN_WAIT_S = 10.0


class DiscordThreadHistory:
    """Reads the earlier messages of a thread or reply chain (module docstring)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    async def earlier_messages(
        self, envelope: IngressEnvelope, *, limit: int, max_chars: int
    ) -> Sequence[EarlierMessage] | None:
        if envelope.is_direct or limit <= 0:
            return []
        client = await self._connection.logged_in(LOGIN_WAIT_S)
        if client is None or client.user is None:
            return None
        me = client.user.id
        try:
            if envelope.thread_id and envelope.thread_id != envelope.message_id:
                found = await self._thread(client, int(envelope.thread_id), envelope, limit, me)
            else:
                found = await self._chain(client, envelope, limit)
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("discord_thread_unread", error=f"{type(exc).__name__}: {exc}")
            return None
        kept: list[EarlierMessage] = []
        chars = 0
        for message in reversed(found):
            earlier = _earlier(message, str(me))
            chars += len(earlier.text)
            if chars > max_chars:
                break
            kept.append(earlier)
        return kept[::-1]

    async def _thread(
        self,
        client: discord.Client,
        thread_id: int,
        envelope: IngressEnvelope,
        limit: int,
        me: int,
    ) -> list[discord.Message]:
        """The thread's messages before the mention and the bot's first, oldest first."""
        channel = client.get_partial_messageable(thread_id)
        before = discord.Object(int(envelope.message_id))
        newest_first = [m async for m in channel.history(limit=limit, before=before)]
        found: list[discord.Message] = []
        for message in reversed(newest_first):
            if message.author.id == me:
                break
            found.append(message)
        return found

    async def _chain(
        self, client: discord.Client, envelope: IngressEnvelope, limit: int
    ) -> list[discord.Message]:
        """The messages the mention replies to, one reference after another, oldest first."""
        channel = client.get_partial_messageable(int(envelope.conversation_id))
        message = await channel.fetch_message(int(envelope.message_id))
        found: list[discord.Message] = []
        while len(found) < limit:
            reference = message.reference
            if reference is None or reference.message_id is None:
                break
            resolved = reference.resolved
            if isinstance(resolved, discord.Message):
                message = resolved
            else:
                message = await channel.fetch_message(reference.message_id)
            found.append(message)
        return found[::-1]


def _earlier(message: discord.Message, me: str) -> EarlierMessage:
    # read off the REST message alone: a message fetched through a partial channel has no
    # guild to resolve the author's roles against (facts_from_message would need one)
    author = message.author
    facts = MessageFacts(
        message_id=str(message.id),
        channel_id=str(message.channel.id),
        author_id=str(author.id),
        content=message.content,
        mentioned_users=tuple((str(u.id), u.display_name) for u in message.mentions),
    )
    return EarlierMessage(
        message_id=str(message.id),
        sender=Sender(id=str(author.id), display_name=author.display_name, is_bot=author.bot),
        text=clean_text(facts, me),
        at=message.created_at.timestamp(),
        from_this_bot=str(author.id) == me,
    )
