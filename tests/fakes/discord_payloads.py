"""Discord API objects as the gateway and REST API carry them, for the fake and for tests.

Guilds the fake serves are :class:`FakeGuild` values; the builders return plain JSON objects
(``GUILD_CREATE``, ``MESSAGE_CREATE``, ``INTERACTION_CREATE`` for buttons, modals and
application commands, ``MESSAGE_REACTION_ADD`` payloads, and the shapes of REST replies) in
the shape discord.py 2.7 parses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
TIMESTAMP = "2025-01-01T00:00:00.000000+00:00"
APPLICATION_ID = "900000000000000002"

# Permission bits (https://discord.com/developers/docs/topics/permissions).
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
READ_MESSAGE_HISTORY = 1 << 16
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
#: What @everyone may do in a new guild, as far as hatchway cares: see and talk.
EVERYONE_DEFAULT = (
    ADD_REACTIONS
    | VIEW_CHANNEL
    | SEND_MESSAGES
    | READ_MESSAGE_HISTORY
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)


@dataclass(slots=True, kw_only=True)
class FakeGuild:
    """A guild the fake serves. ``members`` (user id -> role ids) is who is in it; None
    leaves membership unmodelled (no member route, as before). ``overwrites`` are channels'
    permission overwrites (see :func:`visible_only_to`); ``private_threads`` names the
    members of private threads (the thread itself is in ``threads``)."""

    id: str
    name: str = "hatchway-test"
    channels: dict[str, str] = field(default_factory=dict)  # id -> name
    roles: dict[str, str] = field(default_factory=dict)  # id -> name (besides @everyone)
    threads: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (parent, owner)
    members: dict[str, list[str]] | None = None
    overwrites: dict[str, list[JSON]] = field(default_factory=dict)  # channel id -> overwrites
    private_threads: dict[str, set[str]] = field(default_factory=dict)  # thread -> member ids
    everyone_permissions: int = EVERYONE_DEFAULT
    premium_tier: int = 0  # boost level: the upload limit grows with it


def visible_only_to(guild: FakeGuild, *ids: str) -> list[JSON]:
    """Overwrites hiding a channel from @everyone and showing it to ``ids`` (role or user
    ids of ``guild``)."""
    hidden: JSON = {"id": guild.id, "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}
    shown = [
        {"id": i, "type": 0 if i in guild.roles else 1, "allow": str(VIEW_CHANNEL), "deny": "0"}
        for i in ids
    ]
    return [hidden, *shown]


def channel_payload(guild: FakeGuild, channel_id: str, position: int = 0) -> JSON:
    """A guild text channel object."""
    return {
        "id": channel_id,
        "type": 0,
        "name": guild.channels[channel_id],
        "position": position,
        "guild_id": guild.id,
        "permission_overwrites": guild.overwrites.get(channel_id, []),
        "nsfw": False,
        "parent_id": None,
    }


def member_payload(user: JSON, roles: list[str]) -> JSON:
    """A guild member object (``GET /guilds/{id}/members/{user}``)."""
    return {
        "user": user,
        "roles": roles,
        "joined_at": TIMESTAMP,
        "deaf": False,
        "mute": False,
        "flags": 0,
    }


def application_payload(application_id: str, bot_user: JSON) -> JSON:
    """The application object (``GET /oauth2/applications/@me``) of the bot ``bot_user``."""
    return {
        "id": application_id,
        "name": "hatchway",
        "icon": None,
        "description": "",
        "rpc_origins": [],
        "bot_public": True,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": 0,
        "team": None,
        "owner": {k: bot_user[k] for k in ("id", "username", "discriminator", "avatar")},
    }


def registered_command(
    command: JSON, application_id: str, command_id: str, guild_id: str | None
) -> JSON:
    """The application command object Discord answers a registration with."""
    scope = {"guild_id": guild_id} if guild_id else {}
    return {
        **command,
        "id": command_id,
        "application_id": application_id,
        "version": command_id,
        **scope,
    }


def guild_payload(guild: FakeGuild, bot_user: JSON) -> JSON:
    """The GUILD_CREATE payload of ``guild``, with the bot ``bot_user`` as its one member."""
    everyone = {
        "id": guild.id,
        "name": "@everyone",
        "permissions": str(guild.everyone_permissions),
        "position": 0,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
    }
    roles: list[JSON] = [everyone] + [
        {**everyone, "id": rid, "name": name, "position": i + 1}
        for i, (rid, name) in enumerate(guild.roles.items())
    ]
    channels = [channel_payload(guild, cid, i) for i, cid in enumerate(guild.channels)]
    threads = [
        thread_payload(tid, parent, owner, guild.id, private=tid in guild.private_threads)
        for tid, (parent, owner) in guild.threads.items()
    ]
    return {
        "id": guild.id,
        "name": guild.name,
        "owner_id": "1",
        "roles": roles,
        "channels": channels,
        "threads": threads,
        "emojis": [],
        "stickers": [],
        "features": [],
        "member_count": 2,
        "large": False,
        "unavailable": False,
        "voice_states": [],
        "presences": [],
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "premium_tier": guild.premium_tier,
        "preferred_locale": "en-US",
        "nsfw_level": 0,
        "joined_at": TIMESTAMP,
        "members": [
            {
                "user": bot_user,
                "roles": [],
                "joined_at": TIMESTAMP,
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
        ],
    }


def thread_payload(
    thread_id: str, parent_id: str, owner_id: str, guild_id: str | None, *, private: bool = False
) -> JSON:
    """A thread channel object (public unless ``private``)."""
    return {
        "id": thread_id,
        "type": 12 if private else 11,
        "parent_id": parent_id,
        "name": "thread",
        "owner_id": owner_id,
        "guild_id": guild_id,
        "message_count": 0,
        "member_count": 1,
        "rate_limit_per_user": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
        },
    }


def user_payload(user_id: str, name: str, *, bot: bool = False) -> JSON:
    return {
        "id": user_id,
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


def message_payload(
    *,
    id: str,
    channel_id: str,
    author: JSON,
    content: str,
    guild_id: str | None = None,
    mentions: list[JSON] | None = None,
    member_roles: list[str] | None = None,
    referenced: JSON | None = None,
    attachments: list[JSON] | None = None,
) -> JSON:
    """A MESSAGE_CREATE payload (and the shape of REST message replies)."""
    payload: JSON = {
        "id": id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": TIMESTAMP,
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        "components": [],
    }
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["member"] = {
            "roles": member_roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "flags": 0,
        }
    if referenced is not None:
        payload["type"] = 19
        payload["referenced_message"] = referenced
        payload["message_reference"] = {
            "message_id": referenced["id"],
            "channel_id": referenced["channel_id"],
        }
    return payload


def component_interaction(
    *,
    id: str,
    message: JSON,
    custom_id: str,
    user: JSON,
    guild_id: str | None = None,
    roles: list[str] | None = None,
    application_id: str = APPLICATION_ID,
) -> JSON:
    """An INTERACTION_CREATE payload for a button (type 3, component_type 2) on ``message``."""
    data: JSON = {"custom_id": custom_id, "component_type": 2}
    return _interaction(
        id=id,
        kind=3,
        channel_id=message["channel_id"],
        message=message,
        data=data,
        user=user,
        guild_id=guild_id,
        roles=roles,
        application_id=application_id,
    )


def select_interaction(
    *,
    id: str,
    message: JSON,
    custom_id: str,
    values: list[str],
    user: JSON,
    guild_id: str | None = None,
    application_id: str = APPLICATION_ID,
) -> JSON:
    """An INTERACTION_CREATE payload for a pick in a string select menu on ``message``
    (type 3, component_type 3, the picked options' ``values``)."""
    data: JSON = {"custom_id": custom_id, "component_type": 3, "values": values}
    return _interaction(
        id=id,
        kind=3,
        channel_id=message["channel_id"],
        message=message,
        data=data,
        user=user,
        guild_id=guild_id,
        roles=None,
        application_id=application_id,
    )


def modal_submit_interaction(
    *,
    id: str,
    custom_id: str,
    values: Mapping[str, str],
    user: JSON,
    channel_id: str,
    message: JSON | None = None,
    guild_id: str | None = None,
    roles: list[str] | None = None,
    in_labels: bool = True,
    application_id: str = APPLICATION_ID,
) -> JSON:
    """An INTERACTION_CREATE payload for a submitted modal (type 5): one text input per value,
    each in a Label (type 18, ``in_labels``) or an action row (type 1). ``message`` is the
    message whose button opened the modal (Discord includes it in that case)."""
    components: list[JSON] = []
    for n, (field_id, value) in enumerate(values.items()):
        text: JSON = {"type": 4, "id": 2 * n + 2, "custom_id": field_id, "value": value}
        if in_labels:
            components.append({"type": 18, "id": 2 * n + 1, "component": text})
        else:
            components.append({"type": 1, "id": 2 * n + 1, "components": [text]})
    return _interaction(
        id=id,
        kind=5,
        channel_id=channel_id,
        message=message,
        data={"custom_id": custom_id, "components": components},
        user=user,
        guild_id=guild_id,
        roles=roles,
        application_id=application_id,
    )


def command_interaction(
    *,
    id: str,
    command_id: str,
    name: str,
    user: JSON,
    channel: JSON,
    guild_id: str | None = None,
    roles: list[str] | None = None,
    application_id: str = APPLICATION_ID,
    options: dict[str, str] | None = None,
) -> JSON:
    """An INTERACTION_CREATE payload for a chat-input application command (type 2), used in
    ``channel`` (the partial channel object Discord sends: a thread's carries its parent),
    with ``options`` as string options (type 3) by name. A global command's data names no
    guild."""
    given = [{"name": k, "type": 3, "value": v} for k, v in (options or {}).items()]
    data: JSON = {"id": command_id, "name": name, "type": 1, "options": given}
    return _interaction(
        id=id,
        kind=2,
        channel_id=channel["id"],
        message=None,
        data=data,
        user=user,
        guild_id=guild_id,
        roles=roles,
        application_id=application_id,
        channel=channel,
    )


def _interaction(
    *,
    id: str,
    kind: int,
    channel_id: str,
    message: JSON | None,
    data: JSON,
    user: JSON,
    guild_id: str | None,
    roles: list[str] | None,
    application_id: str,
    channel: JSON | None = None,
) -> JSON:
    channel_type = 0 if guild_id else 1
    payload: JSON = {
        "id": id,
        "application_id": application_id,
        "type": kind,
        "token": f"itoken{id}",
        "version": 1,
        "channel_id": channel_id,
        "channel": channel or {"id": channel_id, "type": channel_type},
        "data": data,
        "locale": "en-US",
        "app_permissions": "0",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "attachment_size_limit": 8_388_608,
    }
    if message is not None:
        payload["message"] = message
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["guild_locale"] = "en-US"
        payload["member"] = {
            "user": user,
            "roles": roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "permissions": "0",
            "flags": 0,
        }
    else:
        payload["user"] = user
    return payload


def reaction_add(
    *,
    message: JSON,
    user: JSON,
    emoji: str,
    guild_id: str | None = None,
    roles: list[str] | None = None,
) -> JSON:
    """A MESSAGE_REACTION_ADD payload for a unicode ``emoji`` on ``message``."""
    payload: JSON = {
        "user_id": user["id"],
        "channel_id": message["channel_id"],
        "message_id": message["id"],
        "emoji": {"id": None, "name": emoji},
        "burst": False,
        "type": 0,
    }
    if guild_id is not None:
        payload["guild_id"] = guild_id
        payload["member"] = {
            "user": user,
            "roles": roles or [],
            "joined_at": TIMESTAMP,
            "deaf": False,
            "mute": False,
            "flags": 0,
        }
    return payload
