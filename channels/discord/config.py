"""``[channels.discord.<alias>]``: the Discord channel's keys (docs/channels/discord.md).

Loaded with the settings (:mod:`bot.channel_registry`), so it imports pydantic and ``bot``
only, never discord.py.
"""

from __future__ import annotations

from pydantic import Field

from bot.channel_config import ChannelCommon
from bot.config_model import Reconnecting


class DiscordChannelConfig(ChannelCommon, Reconnecting):
    """``reconnect_*`` pace the login retries while Discord is unreachable; once connected,
    discord.py resumes a dropped gateway with its own backoff. ``sync_commands`` registers
    the chat commands as the application's global commands at each start (false: leave the
    application's commands as they are).

    ``catch_up_max_age`` and ``catch_up_max_messages`` bound the catch-up of a new gateway
    session (:mod:`channels.discord.catch_up`): what was posted in a conversation the bot
    has seen before, at most that many seconds ago (0: no catch-up) and at most that many
    messages per conversation."""

    token_env: str = "HATCHWAY_DISCORD_TOKEN"
    api_base_url: str | None = None
    gateway_url: str | None = None
    allowed_guilds: list[str] = Field(default=[])
    thread_per_request: bool = False
    guild_ready_timeout_s: float = Field(default=2.0, gt=0)
    sync_commands: bool = True
    catch_up_max_age: float = Field(default=3600.0, ge=0)
    catch_up_max_messages: int = Field(default=50, ge=1, le=1000)


#: The model the registry validates ``[channels.discord.*]`` tables with.
CHANNEL_CONFIG = DiscordChannelConfig
