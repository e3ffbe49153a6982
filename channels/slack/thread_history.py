"""A thread read back from Slack: the Slack channel's :class:`~bot.channel.ThreadHistory`.

Mentioned in a thread, the bot reads the thread with ``conversations.replies`` (the parent
first, then the replies, oldest first; paged) and keeps the messages before the mention, up
to the bot's own first message there: at most ``limit`` of them and ``max_chars`` characters,
the newest kept. Text is made readable as a live message's is (:func:`~channels.slack.
normalise.clean_text`), authors named by their display names (cached). A mention at a
conversation's top level (its thread is itself) or in a DM reads nothing.

Rate limits: Slack limits ``conversations.replies`` hard for apps distributed outside the
Marketplace (one request a minute, 15 messages each), not for internal ones; a ``ratelimited``
answer is waited out after its ``Retry-After`` by the Web API client
(:class:`~channels.slack.api.MethodRateLimiter`), a few times; then the thread is unread
(None) and the turn goes on without it, or, when its first pages were read, with what they
held.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from bot.channel import EarlierMessage
from bot.envelope import IngressEnvelope, Sender
from bot.errors import ChannelError
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.normalise import BotIdentity, clean_text, message_key

log = structlog.get_logger(__name__)

#: Pages of a thread read at most.
MAX_PAGES = 5


def _ts(value: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in value.split(".", 1))


def _is_bots(message: Mapping[str, Any], bot: BotIdentity) -> bool:
    bot_id, user = message.get("bot_id"), message.get("user")
    return bool((bot.bot_id and bot_id == bot.bot_id) or (user and user == bot.user_id))


class SlackThreadHistory:
    """Reads the earlier messages of a thread (module docstring)."""

    def __init__(self, *, api: SlackWebApi, names: DisplayNames) -> None:
        self._api = api
        self._names = names
        self._bot: BotIdentity | None = None

    def know(self, bot: BotIdentity) -> None:
        """The bot's identity, once the adapter has it (saves an ``auth.test``)."""
        self._bot = bot

    async def earlier_messages(
        self, envelope: IngressEnvelope, *, limit: int, max_chars: int
    ) -> Sequence[EarlierMessage] | None:
        own = envelope.message_id.rsplit(":", 1)[-1]
        thread = envelope.thread_id
        if envelope.is_direct or not thread or thread == own:
            return []
        try:
            bot = self._bot or await self._api.auth_test()
            self._bot = bot
            found = await self._read(envelope.conversation_id, thread, own, bot)
        except ChannelError as exc:
            log.warning("slack_thread_unread", error=str(exc))
            return None
        kept: list[Mapping[str, Any]] = []
        chars = 0
        for message in reversed(found[-limit:] if limit else []):
            chars += len(str(message.get("text") or ""))
            if chars > max_chars:
                break
            kept.append(message)
        return [await self._earlier(envelope, m, bot) for m in reversed(kept)]

    async def _read(
        self, channel: str, thread: str, own: str, bot: BotIdentity
    ) -> list[Mapping[str, Any]]:
        """The thread's messages before ``own`` and the bot's first, oldest first."""
        found: list[Mapping[str, Any]] = []
        cursor = ""
        for _ in range(MAX_PAGES):
            try:
                page = await self._api.history_page(
                    channel=channel, thread_ts=thread, oldest="", cursor=cursor
                )
            except ChannelError as exc:
                if not cursor:
                    raise
                # a later page refused (Slack's limit outlasted its retries): what was read
                log.info("slack_thread_read_in_part", messages=len(found), error=str(exc))
                return found
            for message in page.messages:
                ts = str(message.get("ts") or "")
                if not ts or _ts(ts) >= _ts(own) or _is_bots(message, bot):
                    return found
                if message.get("subtype") in (None, "", "bot_message", "thread_broadcast"):
                    found.append(message)
            if not (page.has_more and page.next_cursor):
                return found
            cursor = page.next_cursor
        return found

    async def _earlier(
        self, envelope: IngressEnvelope, message: Mapping[str, Any], bot: BotIdentity
    ) -> EarlierMessage:
        user = str(message.get("user") or "")
        ts = str(message.get("ts"))
        return EarlierMessage(
            message_id=message_key(envelope.conversation_id, ts),
            sender=Sender(
                id=user or str(message.get("bot_id") or ""),
                display_name=(await self._names.get(user)) if user else "",
                is_bot=bool(message.get("bot_id")),
            ),
            text=clean_text(str(message.get("text") or ""), bot.user_id),
            at=float(ts),
        )
