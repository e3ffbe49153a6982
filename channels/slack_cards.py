"""Where approval cards were posted, remembered across restarts.

A reaction names a message (channel and ``ts``), not an approval; this index maps a posted
card back to its approval id (and thread, for the ephemeral answer). It lives in the store's
small per-channel state rather than in memory, so it does not depend on the process that
posted the card. A decided card is forgotten: reactions on it change nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class CardLocation:
    approval_id: str
    thread_ts: str | None = None


class CardIndex:
    """``(channel, ts) → CardLocation`` for pending cards; without a store it remembers none."""

    def __init__(self, store: Store | None, channel: str) -> None:
        self._store = store
        self._channel = channel

    @staticmethod
    def _key(conversation: str, ts: str) -> str:
        return f"card:{conversation}:{ts}"

    async def remember(self, conversation: str, ts: str, location: CardLocation) -> None:
        if self._store is None:
            return
        value = json.dumps({"approval_id": location.approval_id, "thread_ts": location.thread_ts})
        await self._store.channel_state.set(self._channel, self._key(conversation, ts), value)

    async def forget(self, conversation: str, ts: str) -> None:
        if self._store is not None:
            await self._store.channel_state.delete(self._channel, self._key(conversation, ts))

    async def find(self, conversation: str, ts: str) -> CardLocation | None:
        if self._store is None:
            return None
        raw = await self._store.channel_state.get(self._channel, self._key(conversation, ts))
        if not raw:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("approval_id"), str):
            return None
        thread = data.get("thread_ts")
        return CardLocation(
            approval_id=data["approval_id"], thread_ts=thread if isinstance(thread, str) else None
        )
