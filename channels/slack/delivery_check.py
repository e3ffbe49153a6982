"""Whether a reply reached Slack: the Slack channel's :class:`~bot.channel.DeliveryCheck`.

Each chunk of a keyed reply (``send(target, text, key=…)``) is posted with message metadata
(:func:`reply_metadata`): ``event_type`` ``hatchway_reply`` and an ``event_payload`` naming the
key and the chunk (``{"key": key, "part": 1, "parts": 3}``). Slack keeps metadata with the
message and returns it from ``conversations.history`` and ``conversations.replies`` asked
with ``include_all_metadata``. After a crash, recovery asks for the messages after the
user's (``oldest`` is its ``ts``): in the target's thread (``conversations.replies``), or at
the conversation's top level (``conversations.history``). The messages kept are this bot's
(its bot id or user id, from ``auth.test``) whose metadata names the key; the answer is one
:class:`~bot.channel.SentMessage` per part found, in part order (the earliest copy of a part
posted twice). A reply cut off between chunks is found in part: the parts that went out.

Unanswerable, so ``None`` (the reply stays unconfirmed, and is never sent twice): a failed
call; more than :data:`MAX_PAGES` pages of messages after the user's, none of them the
reply; a slash command's answers, which are ephemeral and kept in no history.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from bot.channel import SentMessage
from bot.envelope import ChannelRef, DeliveryTarget
from bot.errors import ChannelError
from channels.slack.api import SlackWebApi
from channels.slack.commands import SLASH_PREFIX
from channels.slack.normalise import BotIdentity

log = structlog.get_logger(__name__)

#: The metadata ``event_type`` of a reply's chunks.
REPLY_EVENT = "hatchway_reply"
#: Pages of history read at most while looking for a reply.
MAX_PAGES = 10


def reply_metadata(key: str, part: int, parts: int) -> dict[str, object]:
    """The metadata of chunk ``part`` (from 1) of ``parts`` of the reply ``key``."""
    return {
        "event_type": REPLY_EVENT,
        "event_payload": {"key": key, "part": part, "parts": parts},
    }


def _part_of(message: Mapping[str, Any], key: str) -> int | None:
    """The chunk number of ``message`` if its metadata marks it a chunk of reply ``key``."""
    metadata = message.get("metadata")
    if not isinstance(metadata, Mapping) or metadata.get("event_type") != REPLY_EVENT:
        return None
    payload = metadata.get("event_payload")
    if not isinstance(payload, Mapping) or payload.get("key") != key:
        return None
    part = payload.get("part", 1)
    return part if isinstance(part, int) and part >= 1 else 1


class SlackDeliveryCheck:
    """Finds a reply's chunks by their metadata (module docstring)."""

    def __init__(self, *, ref: ChannelRef, api: SlackWebApi) -> None:
        self._ref = ref
        self._api = api
        self._bot: BotIdentity | None = None

    def know(self, bot: BotIdentity) -> None:
        """The bot's identity, once the adapter has it (saves an ``auth.test``)."""
        self._bot = bot

    async def find_delivered(
        self,
        target: DeliveryTarget,
        *,
        key: str,
        text: str,
        after_message_id: str | None,
    ) -> Sequence[SentMessage] | None:
        if not key or target.conversation_id.startswith(SLASH_PREFIX):
            return None
        if after_message_id and after_message_id.startswith(SLASH_PREFIX):
            return None  # answered privately through the response URL
        oldest = after_message_id.rsplit(":", 1)[-1] if after_message_id else ""
        try:
            bot = self._bot or await self._api.auth_test()
            self._bot = bot
            return await self._search(target, key, oldest, bot)
        except ChannelError as exc:
            log.warning("slack_delivery_check_failed", channel=str(self._ref), error=str(exc))
            return None

    async def _search(
        self, target: DeliveryTarget, key: str, oldest: str, bot: BotIdentity
    ) -> Sequence[SentMessage] | None:
        parts: dict[int, str] = {}
        cursor = ""
        for _ in range(MAX_PAGES):
            page = await self._api.history_page(
                channel=target.conversation_id,
                thread_ts=target.thread_id,
                oldest=oldest,
                cursor=cursor,
            )
            for message in page.messages:
                part = _part_of(message, key)
                if part is None or not _is_bots(message, bot):
                    continue
                ts = str(message.get("ts") or "")
                if ts and (part not in parts or _ts_order(ts) < _ts_order(parts[part])):
                    parts[part] = ts
            if not (page.has_more and page.next_cursor):
                return self._found(target, parts, complete=not page.has_more)
            cursor = page.next_cursor
        return self._found(target, parts, complete=False)

    def _found(
        self, target: DeliveryTarget, parts: Mapping[int, str], *, complete: bool
    ) -> Sequence[SentMessage] | None:
        if not parts and not complete:
            log.info("slack_delivery_check_incomplete", channel=str(self._ref))
            return None
        return [SentMessage(target=target, message_id=parts[p]) for p in sorted(parts)]


def _is_bots(message: Mapping[str, Any], bot: BotIdentity) -> bool:
    bot_id, user = message.get("bot_id"), message.get("user")
    return bool((bot.bot_id and bot_id == bot.bot_id) or (user and user == bot.user_id))


def _ts_order(ts: str) -> tuple[int, ...]:
    """A ``ts`` (``seconds.micros``) as a sortable value."""
    return tuple(int(p) if p.isdigit() else 0 for p in ts.split(".", 1))
