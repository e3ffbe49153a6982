"""Who can see a Slack conversation: the adapter's answer to
:class:`bot.approval.reach.MemberLookup`.

A conversation's members come from ``conversations.members`` (every page; public and private
channels, group DMs and DMs alike, a DM listing its two members), kept per conversation for
``ttl_s`` so the approvers of one card, and the cards of a busy channel, cost one read. A
thread is seen by whoever sees its channel, so only the target's ``conversation_id``
matters. A target naming a user (``U…``/``W…``: an approver's DM copy) is that user's DM
with the app, seen by them alone.

"Cannot tell" is ``None``, never an exception: a failed or slow call (not cached, so the
next card asks again), and a user missing from the first ``max_pages`` pages of a longer
list (the pages read are cached: the list will not get shorter soon).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.envelope import DeliveryTarget
from bot.errors import ChannelError
from channels.slack.api import SlackWebApi

log = structlog.get_logger(__name__)

#: How long a member list is trusted: short, so someone just invited counts within a minute.
MEMBERS_TTL_S = 60.0
#: Pages of ``conversations.members`` read at most (of ``PAGE_SIZE`` members each).
MAX_PAGES = 20
PAGE_SIZE = 1000


def is_user_id(conversation_id: str) -> bool:
    """Whether a target's conversation is a user id (a DM with them) rather than a channel."""
    return conversation_id[:1] in ("U", "W")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberList:
    """The members read for one conversation; ``complete`` unless the list was too long."""

    members: frozenset[str]
    complete: bool

    def has(self, user_id: str) -> bool | None:
        if user_id in self.members:
            return True
        return False if self.complete else None


class ConversationMembers:
    """Member lists of conversations, cached; see the module docstring."""

    def __init__(
        self,
        api: SlackWebApi,
        *,
        ttl_s: float = MEMBERS_TTL_S,
        max_pages: int = MAX_PAGES,
        page_size: int = PAGE_SIZE,
        lookup_timeout_s: float = 5.0,
        max_entries: int = 512,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._ttl = ttl_s
        self._max_pages = max_pages
        self._page_size = page_size
        self._timeout = lookup_timeout_s
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[float, MemberList]] = OrderedDict()

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        """True or False as Slack's member list says; None when it cannot be read."""
        conversation = target.conversation_id
        if is_user_id(conversation):
            return user_id == conversation
        members = await self.members(conversation)
        return None if members is None else members.has(user_id)

    async def members(self, conversation: str) -> MemberList | None:
        """The members of ``conversation``; None when Slack could not be asked."""
        now = self._clock()
        hit = self._entries.get(conversation)
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            async with asyncio.timeout(self._timeout):
                members = await self._read(conversation)
        except (ChannelError, TimeoutError) as exc:
            log.info("slack_members_lookup_failed", conversation=conversation, error=str(exc))
            return None
        self._entries[conversation] = (now + self._ttl, members)
        self._entries.move_to_end(conversation)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return members

    async def _read(self, conversation: str) -> MemberList:
        found: set[str] = set()
        cursor = ""
        for _ in range(self._max_pages):
            page, cursor = await self._api.conversation_members(
                channel=conversation, cursor=cursor, limit=self._page_size
            )
            found.update(page)
            if not cursor:
                return MemberList(members=frozenset(found), complete=True)
        log.info("slack_members_too_many", conversation=conversation, read=len(found))
        return MemberList(members=frozenset(found), complete=False)
