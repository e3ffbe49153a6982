"""Waiting on a channel's health from a test, for any ``Channel`` (adapter or whole daemon)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from bot.channel import Channel, ChannelHost, HealthState


async def wait_for_health(channel: Channel, *states: HealthState, within: float = 10.0) -> None:
    """Wait until the channel's health is one of ``states``."""
    async with asyncio.timeout(within):
        # Health is a plain property with no change notification, so it is polled.
        while channel.health.state not in states:  # noqa: ASYNC110
            await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def serving(channel: Channel, host: ChannelHost) -> AsyncIterator[None]:
    """Run ``channel`` until the block ends: CONNECTED inside the block, STOPPED after it."""
    task = asyncio.create_task(channel.run(host))
    try:
        await wait_for_health(channel, HealthState.CONNECTED)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert channel.health.state is HealthState.STOPPED
