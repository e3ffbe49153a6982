"""Who is who in the fake Discord: guild members, channels as ``GET /channels/{id}`` shows
them, private thread members, and the bot's DMs with users.

:class:`People` answers the routes about them, as Discord does:

* ``GET /guilds/{g}/members/{u}``: the member (roles from :attr:`FakeGuild.members`), or
  404 Unknown Member (10007); a guild whose ``members`` is None has no such route, as before;
* ``GET /channels/{t}/thread-members/{u}`` of a private thread: 200 for its members, 404
  Unknown Member otherwise;
* ``GET /channels/{id}``: a guild channel, thread or DM channel, or 404 Unknown Channel
  (10003);
* ``POST /users/@me/channels`` opens (or reuses) the bot's DM channel with a user;
* ``POST /channels/{id}/messages`` to an id that is no channel (a user's id, say: the bot
  must open a DM first) is 404 Unknown Channel, and to the DM of a user in
  :attr:`People.closed_dms` 403 "Cannot send messages to this user" (50007).

Answers are ``(status, body)``; None leaves the request to the rest of the fake.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tests.fakes.discord_payloads import (
    JSON,
    TIMESTAMP,
    FakeGuild,
    channel_payload,
    member_payload,
    thread_payload,
    user_payload,
)

Answer = tuple[int, JSON]
UNKNOWN_CHANNEL: Answer = (404, {"message": "Unknown Channel", "code": 10003})
UNKNOWN_MEMBER: Answer = (404, {"message": "Unknown Member", "code": 10007})
CLOSED_DM: Answer = (403, {"message": "Cannot send messages to this user", "code": 50007})


@dataclass(slots=True)
class People:
    new_id: Callable[[], str]
    users: dict[str, JSON] = field(default_factory=dict)  # people the fake knows, by id
    closed_dms: set[str] = field(default_factory=set)  # users who refuse DMs from the bot
    dm_channels: dict[str, str] = field(default_factory=dict)  # DM channel id -> user id

    def user(self, user_id: str) -> JSON:
        return self.users.get(user_id) or user_payload(user_id, f"user{user_id[-4:]}")

    def dm_of(self, user_id: str) -> str | None:
        """The id of the bot's DM channel with ``user_id``, once opened."""
        return next((c for c, u in self.dm_channels.items() if u == user_id), None)

    def route(
        self, method: str, path: str, body: JSON, guilds: Sequence[FakeGuild]
    ) -> Answer | None:
        if (method, path) == ("POST", "/users/@me/channels"):
            return self._open_dm(str(body.get("recipient_id") or ""))
        if (m := re.fullmatch(r"/channels/(\d+)/messages", path)) and method == "POST":
            if m[1] not in self.dm_channels and not _in_a_guild(m[1], guilds):
                return UNKNOWN_CHANNEL  # a user's id, or any id that is no channel
            if self.dm_channels.get(m[1]) in self.closed_dms:
                return CLOSED_DM
            return None
        if method != "GET":
            return None
        if m := re.fullmatch(r"/guilds/(\d+)/members/(\d+)", path):
            guild = next((g for g in guilds if g.id == m[1]), None)
            if guild is None or guild.members is None:
                return None
            roles = guild.members.get(m[2])
            if roles is None:
                return UNKNOWN_MEMBER
            return 200, member_payload(self.user(m[2]), roles)
        if m := re.fullmatch(r"/channels/(\d+)/thread-members/(\d+)", path):
            return self._thread_member(m[1], m[2], guilds)
        if m := re.fullmatch(r"/channels/(\d+)", path):
            return self._channel(m[1], guilds)
        return None

    def _open_dm(self, user_id: str) -> Answer:
        if not user_id.isdigit():
            return 400, {"message": "Invalid Form Body", "code": 50035}
        channel_id = self.dm_of(user_id) or self.new_id()
        self.dm_channels[channel_id] = user_id
        return 200, self._dm_payload(channel_id)

    def _dm_payload(self, channel_id: str) -> JSON:
        recipient = self.user(self.dm_channels[channel_id])
        return {"id": channel_id, "type": 1, "recipients": [recipient], "last_message_id": None}

    def _channel(self, channel_id: str, guilds: Sequence[FakeGuild]) -> Answer:
        if channel_id in self.dm_channels:
            return 200, self._dm_payload(channel_id)
        for guild in guilds:
            if channel_id in guild.channels:
                return 200, channel_payload(guild, channel_id)
            if channel_id in guild.threads:
                parent, owner = guild.threads[channel_id]
                private = channel_id in guild.private_threads
                return 200, thread_payload(channel_id, parent, owner, guild.id, private=private)
        return UNKNOWN_CHANNEL

    @staticmethod
    def _thread_member(thread_id: str, user_id: str, guilds: Sequence[FakeGuild]) -> Answer | None:
        for guild in guilds:
            members = guild.private_threads.get(thread_id)
            if members is not None:
                if user_id not in members:
                    return UNKNOWN_MEMBER
                joined = {"id": thread_id, "user_id": user_id, "join_timestamp": TIMESTAMP}
                return 200, {**joined, "flags": 0}
        return None


def _in_a_guild(channel_id: str, guilds: Sequence[FakeGuild]) -> bool:
    return any(channel_id in g.channels or channel_id in g.threads for g in guilds)
