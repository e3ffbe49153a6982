"""Waiting on a channel's health from a test, for any ``Channel`` (adapter or whole daemon)."""

from __future__ import annotations

import asyncio

from bot.channel import Channel, HealthState


async def wait_for_health(channel: Channel, *states: HealthState, within: float = 10.0) -> None:
    """Wait until the channel's health is one of ``states``."""
    async with asyncio.timeout(within):
        # Health is a plain property with no change notification, so it is polled.
        while channel.health.state not in states:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
