"""Who can see a Discord conversation: the adapter's answer to
:class:`bot.approval.reach.MemberLookup`.

In a guild, a user sees a channel when they are a member of the guild (read from the cache,
else ``GET /guilds/{id}/members/{user}``) and the channel's permissions for them, as
discord.py resolves them from the guild's roles and the channel's overwrites, include *View
Channel*. A thread is seen by whoever sees its parent channel; a private thread only by its
members (``GET /channels/{id}/thread-members/{user}``) and by those who may manage threads.
A thread that is not open yet (``thread_per_request`` opens it with the first answer) is
judged by its channel. A DM channel is seen by its recipient.

"Not in the guild" (Unknown Member, Unknown User) is False. Anything Discord cannot answer
(a failed or slow request, a channel or guild the bot does not know, a conversation that is
not a channel at all) is None, and nothing is raised.
"""

from __future__ import annotations

import asyncio

import aiohttp
import discord
import structlog

from bot.envelope import ChannelRef, DeliveryTarget
from channels.discord.client import Connection, GatewayClient

log = structlog.get_logger(__name__)

UNKNOWN_CHANNEL = 10003
UNKNOWN_MEMBER = 10007
UNKNOWN_USER = 10013
_NOT_A_MEMBER = frozenset({UNKNOWN_MEMBER, UNKNOWN_USER})

Place = discord.abc.GuildChannel | discord.Thread | discord.abc.PrivateChannel


class ConversationMembers:
    """Answers "can this user see that conversation?" from the running client."""

    def __init__(
        self, ref: ChannelRef, connection: Connection, *, lookup_timeout_s: float = 5.0
    ) -> None:
        self._connection = connection
        self._timeout = lookup_timeout_s
        self._log = log.bind(channel=str(ref))

    async def can_see(self, target: DeliveryTarget, user_id: str) -> bool | None:
        """True or False as Discord says; None when it cannot tell."""
        client = self._connection.connected()
        if client is None:
            return None
        try:
            user = int(user_id)
        except ValueError:
            return False  # not a snowflake: no Discord user has this id
        try:
            async with asyncio.timeout(self._timeout):
                return await self._can_see(client, target, user)
        except (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            status = exc.status if isinstance(exc, discord.HTTPException) else None
            self._log.info(
                "discord_member_lookup_failed",
                conversation=target.conversation_id,
                error=type(exc).__name__,
                status=status,
            )
            return None

    async def _can_see(
        self, client: GatewayClient, target: DeliveryTarget, user: int
    ) -> bool | None:
        place: Place | None = None
        if target.thread_id is not None:
            place = await self._place(client, target.thread_id)
        if place is None:
            place = await self._place(client, target.conversation_id)
        if place is None:
            return None
        if isinstance(place, discord.DMChannel):
            recipient = place.recipient
            me = client.user.id if client.user is not None else None
            return None if recipient is None else user in (recipient.id, me)
        if isinstance(place, discord.GroupChannel):
            return any(r.id == user for r in place.recipients)
        if not isinstance(place, discord.abc.GuildChannel | discord.Thread):
            return None
        guild = place.guild
        if guild.unavailable:
            return None
        member = guild.get_member(user)
        if member is None:
            try:
                member = await guild.fetch_member(user)
            except discord.NotFound as exc:
                if exc.code in _NOT_A_MEMBER:
                    return False
                raise
        allowed = place.permissions_for(member)
        if not allowed.view_channel:
            return False
        if isinstance(place, discord.Thread) and place.is_private() and not allowed.manage_threads:
            return await _in_thread(place, user)
        return True

    @staticmethod
    async def _place(client: GatewayClient, channel_id: str) -> Place | None:
        """The channel (or thread) ``channel_id``; None when Discord has no such channel."""
        try:
            number = int(channel_id)
        except ValueError:
            return None
        cached = client.get_channel(number)
        if cached is not None and not isinstance(cached, discord.PartialMessageable):
            return cached
        try:
            return await client.fetch_channel(number)
        except discord.NotFound as exc:
            if exc.code == UNKNOWN_CHANNEL:
                return None
            raise


async def _in_thread(thread: discord.Thread, user: int) -> bool:
    try:
        await thread.fetch_member(user)
    except discord.NotFound as exc:
        if exc.code in _NOT_A_MEMBER:
            return False
        raise
    return True
