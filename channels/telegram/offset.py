"""The long-polling offset, persisted in the store's per-channel state.

The offset is advanced only after an update was handed to the host, so a restart neither
repeats nor loses updates (a crash between handing over and saving repeats that one update,
which the gateway's dedupe on ``message_id`` absorbs; a repeated edit sets the same text
again). Telegram may restart update ids after a week without updates, so an offset older
than six days is void.
"""

from __future__ import annotations

import asyncio
import json
import time

import structlog

from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)

OFFSET_KEY = "update_offset"
OFFSET_MAX_AGE_S = 6 * 24 * 3600


class PollingOffset:
    """Load and commit the ``getUpdates`` offset of one Telegram alias."""

    def __init__(self, state: ChannelState, channel: str) -> None:
        self._state = state
        self._channel = channel

    async def load(self) -> int | None:
        """The stored offset, or ``None`` when there is none or it is too old to trust."""
        raw = await self._state.get(self._channel, OFFSET_KEY)
        if raw is None:
            return None
        try:
            stored = json.loads(raw)
            offset, saved_at = int(stored["offset"]), float(stored["saved_at"])
        except (ValueError, KeyError, TypeError):
            log.warning("telegram_offset_unreadable", channel=self._channel)
            return None
        if time.time() - saved_at > OFFSET_MAX_AGE_S:
            return None
        return offset

    async def _save(self, offset: int) -> None:
        value = json.dumps({"offset": offset, "saved_at": time.time()})
        await self._state.set(self._channel, OFFSET_KEY, value)

    async def commit(self, offset: int) -> None:
        """Persist ``offset``; a cancellation arriving meanwhile waits for the write, so a
        graceful stop right after a delivery does not repeat that update."""
        saving = asyncio.ensure_future(self._save(offset))
        try:
            await asyncio.shield(saving)
        except asyncio.CancelledError:
            await saving
            raise
