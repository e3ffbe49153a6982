"""What a Slack conversation is called, for the envelope's ``conversation_title`` (the web
console shows it beside the id): ``conversations.info``'s ``name`` (``general``, a private
channel's, a group DM's ``mpdm-…``), cached per conversation.

It is asked for off the ack's path, with the sender's display name, and never holds a message
up for long or often: a name is kept for :data:`NAME_TTL_S` (a channel is seldom renamed); a
lookup that fails (``missing_scope``, a timeout, Slack having a bad day) is not asked again
for :data:`FAILED_TTL_S`; while Slack's ``Retry-After`` for ``conversations.info`` runs, the
name last read (or none) is used without asking. A DM has no name: it is never looked up.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable

import structlog

from bot.errors import ChannelError
from channels.slack.api import SlackWebApi

log = structlog.get_logger(__name__)

NAME_TTL_S = 3600.0
FAILED_TTL_S = 300.0
METHOD = "conversations.info"


class ChannelNames:
    """Conversation names by id, cached; see the module docstring."""

    def __init__(
        self,
        api: SlackWebApi,
        *,
        ttl_s: float = NAME_TTL_S,
        failed_ttl_s: float = FAILED_TTL_S,
        lookup_timeout_s: float = 3.0,
        max_entries: int = 2048,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._ttl = ttl_s
        self._failed_ttl = failed_ttl_s
        self._timeout = lookup_timeout_s
        self._max = max_entries
        self._clock = clock
        #: conversation → (asked again after, the name: "" when unknown)
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()

    async def get(self, conversation: str) -> str:
        """The conversation's name, "" when Slack gives none or cannot be asked now."""
        now = self._clock()
        hit = self._entries.get(conversation)
        if hit is not None and (hit[0] > now or self._api.limiter.blocked(METHOD)):
            return hit[1]
        if self._api.limiter.blocked(METHOD):
            return ""
        try:
            async with asyncio.timeout(self._timeout):
                info = await self._api.conversation_info(conversation)
        except (ChannelError, TimeoutError) as exc:
            log.info("slack_channel_name_lookup_failed", conversation=conversation, error=str(exc))
            self._keep(conversation, now + self._failed_ttl, hit[1] if hit else "")
            return hit[1] if hit else ""
        name = info.get("name")
        self._keep(conversation, now + self._ttl, name if isinstance(name, str) else "")
        return self._entries[conversation][1]

    def _keep(self, conversation: str, until: float, name: str) -> None:
        self._entries[conversation] = (until, name)
        self._entries.move_to_end(conversation)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
