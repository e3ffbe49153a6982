"""The outbox over live channels: how tools (``send_message``) and scheduled jobs post.

A target is allowed when its channel is configured and running, and, for group
conversations under an allow-list policy, the conversation is on the list. Direct messages
are allowed only to users on the channel's ``allowed_users`` (or ``"*"``).
"""

from __future__ import annotations

from collections.abc import Callable

from bot.channel import Channel
from bot.config import Settings
from bot.envelope import ChannelRef, DeliveryTarget


class ChannelOutbox:
    """Implements :class:`bot.tools.builtin.messaging.Outbox` over the daemon's channels."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        channel_for: Callable[[ChannelRef], Channel | None],
    ) -> None:
        self._settings = settings
        self._channel_for = channel_for

    def allows(self, target: DeliveryTarget) -> bool:
        if self._channel_for(target.channel) is None:
            return False
        config = self._settings().channels.get(target.channel.kind, target.channel.alias)
        if config is None:
            return target.channel.kind == "console"
        if config.group_policy == "disabled" and target.conversation_id not in (
            config.allowed_users
        ):
            return False
        if config.group_policy == "allowlist":
            allowed = set(config.allowed_conversations) | set(config.allowed_users)
            return "*" in allowed or target.conversation_id in allowed
        return True

    async def send(self, target: DeliveryTarget, text: str) -> None:
        channel = self._channel_for(target.channel)
        if channel is None:
            raise LookupError(f"channel {target.channel} is not running")
        await channel.send(target, text)
