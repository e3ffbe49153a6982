"""``[channels.console.<alias>]``: the terminal channel, open to whoever is at it.

Also the embedded default of ``hatchway run`` and ``hatchway chat`` when the file configures
no channel (:meth:`bot.config.ChannelsConfig.embedded_console`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.channel_config import ChannelCommon


class ConsoleChannelConfig(ChannelCommon):
    allowed_users: list[str] = Field(default_factory=lambda: ["*"])
    dm_policy: Literal["allowlist", "pairing", "open", "disabled"] = "open"
    require_mention: bool = False


#: The model the registry validates ``[channels.console.*]`` tables with.
CHANNEL_CONFIG = ConsoleChannelConfig
