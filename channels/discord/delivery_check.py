"""Whether a reply reached Discord: the nonce each message of a reply carries, and the
adapter's :class:`~bot.channel.DeliveryCheck`.

Sending. Each message of a reply sent with ``key`` carries a nonce derived from the key,
the message's place in the reply and its text (:func:`reply_nonce`: 25 hex characters,
Discord's longest nonce), which discord.py sends with ``enforce_nonce``: Discord answers a
second create with a nonce the same bot used in the last few minutes with the message
already posted instead of posting again, so a send retried after a lost response, or
resent by recovery soon after a crash, is not doubled. It is a digest rather than the key:
a reply split into several messages needs a nonce per message (``enforce_nonce`` would
answer the second with the first), and two replies of one turn (an answer and a failure
line) share a key.

Finding (:meth:`ReplyFinder.find_delivered`). Discord's history does not return nonces, so
a reply is recognised by what it says and what it answers (a file's message by its caption,
a file without one by its empty text). The rule: among the bot's own
messages in the target's channel (its thread, when it has one) after the user's message,
oldest first and at most :data:`SCAN_LIMIT` of them, the reply starts at the first message
whose text is the reply's first chunk, rendered exactly as ``send`` renders it, and that
replies to the user's message or to nothing (a first chunk in a thread opened from the
request, or an application command's follow-up, carries no reply); each further chunk is
the next bot message after the previous one with that chunk's text. Found: those messages
(fewer than the chunks when the send was cut off part way). A bot message replying to
another message never starts a match, so the same words answering a later question are not
taken for this reply. A thread that was never opened (Unknown Channel) holds nothing: [].
Any other error, or no login within :data:`LOGIN_WAIT_S` (start-up recovery asks while
the adapter is still logging in, so the lookup waits for that): None (recovery then
treats the reply as unconfirmed). Replies only their
user sees (ephemeral answers to an application command) are not in the history and are
never found.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing

import aiohttp
import discord
import structlog

from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from channels.discord.client import LOGIN_WAIT_S, Connection
from channels.discord.markup import render_chunks
from channels.discord.members import UNKNOWN_CHANNEL

log = structlog.get_logger(__name__)

#: Discord's longest message nonce.
NONCE_CHARS = 25
#: The most messages after the user's one looked at for a reply.
SCAN_LIMIT = 300
#: What a blank text is sent as (Discord refuses an empty message without a file).
BLANK_CHUNK = "\u200b"


def reply_nonce(key: str, index: int, chunk: str) -> str:
    """The nonce of message ``index`` (``chunk``, as sent) of the reply named ``key``."""
    digest = hashlib.sha256(f"{key}\0{index}\0{chunk}".encode()).hexdigest()
    return digest[:NONCE_CHARS]


def _as_compared(content: str) -> str:
    """A message's text as a reply is matched by: stripped, and empty for a blank reply
    (sent as a zero-width space, or as no text at all with a file)."""
    stripped = content.strip()
    return "" if stripped == BLANK_CHUNK else stripped


def first_reply_to(target: DeliveryTarget) -> int | None:
    """The message the first chunk of a reply to ``target`` replies to (None: none; in a
    thread opened from the request, the starter is not in the thread)."""
    reply_to = target.reply_to_message_id
    if reply_to is None or reply_to == target.thread_id or not reply_to.isdigit():
        return None
    return int(reply_to)


class ReplyFinder:
    """:class:`~bot.channel.DeliveryCheck` for one Discord adapter (its ``delivery``).
    ``shown_text`` is what a keyed reply of a text says on Discord (the caption of a long
    answer sent as a file, :meth:`~channels.common.outbound.SendsThrough.shown_text`)."""

    def __init__(
        self,
        ref: ChannelRef,
        connection: Connection,
        *,
        shown_text: Callable[[DeliveryTarget, str], str],
    ) -> None:
        self._connection = connection
        self._shown_text = shown_text
        self._log = log.bind(channel=str(ref))

    async def find_delivered(
        self,
        target: DeliveryTarget,
        *,
        key: str,
        text: str,
        after_message_id: str | None,
    ) -> Sequence[SentMessage] | None:
        """The bot's messages that are the reply ``key`` (``text``) to ``target``; a long
        answer sent as a file is found by its caption, or by its text when the file was
        refused and it went as messages."""
        shown = self._shown_text(target, text)
        found = await self._find(target, key=key, text=shown, after_message_id=after_message_id)
        if found == [] and shown != text:
            found = await self._find(target, key=key, text=text, after_message_id=after_message_id)
        return found

    async def _find(
        self,
        target: DeliveryTarget,
        *,
        key: str,
        text: str,
        after_message_id: str | None,
    ) -> Sequence[SentMessage] | None:
        # Start-up recovery asks as the adapter starts: wait for its login (REST), briefly.
        client = await self._connection.logged_in(LOGIN_WAIT_S)
        if client is None or client.user is None:
            self._log.warning("discord_reply_lookup_failed", key=key, error="not logged in")
            return None
        chunks = [_as_compared(chunk) for chunk in render_chunks(text)]
        reply_to = first_reply_to(target)
        bot_id = client.user.id
        where = client.get_partial_messageable(int(target.thread_id or target.conversation_id))
        found: list[SentMessage] = []
        try:
            async with aclosing(self._scan(where, after_message_id)) as messages:
                async for message in messages:
                    if message.author.id != bot_id:
                        continue
                    if _as_compared(message.content) != chunks[len(found)]:
                        continue
                    reference = message.reference
                    if not found and reference is not None and reference.message_id != reply_to:
                        continue
                    found.append(SentMessage(target=target, message_id=str(message.id)))
                    if len(found) == len(chunks):
                        break
        except discord.HTTPException as exc:
            if isinstance(exc, discord.NotFound) and exc.code == UNKNOWN_CHANNEL:
                return []
            self._log.warning("discord_reply_lookup_failed", key=key, status=exc.status)
            return None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            self._log.warning("discord_reply_lookup_failed", key=key, error=type(exc).__name__)
            return None
        self._log.info("discord_reply_looked_for", key=key, found=len(found), chunks=len(chunks))
        return found

    @staticmethod
    async def _scan(
        where: discord.PartialMessageable, after_message_id: str | None
    ) -> AsyncGenerator[discord.Message, None]:
        """The channel's messages after ``after_message_id`` (or its latest ones), oldest
        first, at most :data:`SCAN_LIMIT`."""
        if after_message_id is not None and after_message_id.isdigit():
            after = discord.Object(int(after_message_id))
            async for message in where.history(after=after, oldest_first=True, limit=SCAN_LIMIT):
                yield message
            return
        latest = [message async for message in where.history(limit=SCAN_LIMIT)]
        for message in reversed(latest):
            yield message
