"""Which approval a card message belongs to, remembered across restarts.

A reply or a reaction names a message (chat and message id), not an approval. Every card the
bot posts is recorded here as ``card:{chat_id}:{message_id}`` in the store's per-channel state,
with its approval id and whether the card still offers buttons. A decided card stays known
(a reply to it gets the verdict's answer) but is marked closed (reactions on it count for
nothing). One small row per posted card, like the approval rows themselves.

The index is an aid, not the truth: the approval row decides. Failing to write it is logged
and the card still works through its buttons (whose data carries the approval id).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CardEntry:
    approval_id: str
    open: bool


class CardIndex:
    """``(chat id, message id) → CardEntry`` for the cards one Telegram alias posted."""

    def __init__(self, state: ChannelState, channel: str) -> None:
        self._state = state
        self._channel = channel

    @staticmethod
    def _key(chat_id: int | str, message_id: int) -> str:
        return f"card:{chat_id}:{message_id}"

    async def _write(self, chat_id: int | str, message_id: int, entry: CardEntry) -> None:
        value = json.dumps({"approval_id": entry.approval_id, "open": entry.open})
        try:
            await self._state.set(self._channel, self._key(chat_id, message_id), value)
        except StorageError as exc:
            log.warning(
                "telegram_card_index_write_failed",
                channel=self._channel,
                approval_id=entry.approval_id,
                error=str(exc),
            )

    async def remember(self, chat_id: int | str, message_id: int, approval_id: str) -> None:
        """Record a card just posted with buttons."""
        await self._write(chat_id, message_id, CardEntry(approval_id=approval_id, open=True))

    async def close(self, chat_id: int | str, message_id: int, approval_id: str) -> None:
        """Record that the card was edited to its outcome (no buttons any more)."""
        await self._write(chat_id, message_id, CardEntry(approval_id=approval_id, open=False))

    async def find(self, chat_id: int | str, message_id: int) -> CardEntry | None:
        """The card posted as this message, or ``None`` when it is not a known card."""
        raw = await self._state.get(self._channel, self._key(chat_id, message_id))
        if not raw:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("approval_id"), str):
            return None
        return CardEntry(approval_id=data["approval_id"], open=data.get("open") is True)
