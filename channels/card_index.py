"""Which approval a card message belongs to, remembered across restarts; one index for every
adapter.

A reaction or a reply names a message, not an approval. Each card an adapter posts is
recorded as ``card:{conversation}:{message}`` in the store's per-channel state, where
``conversation`` and ``message`` are the platform's own ids for where the card is (Slack:
channel and ``ts``; Telegram: chat and message number; Discord: channel and message). The
entry holds the approval id, whether the card still offers buttons, and the card's thread
(where a private answer to a reaction goes). A decided card stays known but closed:
reactions on it count for nothing, a reply to it is still recognised as one.

The index is an aid, not the truth: the approval row decides. A failed write is logged and
the card still works through its buttons, whose data carries the approval id. Rows written
before the index was shared are read where they can be (Telegram's fully, Slack's without
their thread); any other row that cannot be read counts as no entry. The daemon prunes
``card:`` rows older than a week at start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "card:"


@dataclass(frozen=True, slots=True, kw_only=True)
class CardEntry:
    """One posted card: its approval, whether its buttons are still offered, its thread."""

    approval_id: str
    open: bool = True
    thread_id: str | None = None


def _parse(raw: str) -> CardEntry | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("approval_id"), str):
        return None
    thread = data.get("thread_id")
    return CardEntry(
        approval_id=data["approval_id"],
        # Rows without the flag were written only for open cards.
        open=data.get("open", True) is True,
        thread_id=thread if isinstance(thread, str) else None,
    )


class CardIndex:
    """``(conversation, message) → CardEntry`` for the cards one channel alias posted.
    Without a state store (an adapter run on its own) it remembers nothing."""

    def __init__(self, state: ChannelState | None, channel: str) -> None:
        self._state = state
        self._channel = channel

    @staticmethod
    def _key(conversation: int | str, message: int | str) -> str:
        return f"{KEY_PREFIX}{conversation}:{message}"

    async def remember(self, conversation: int | str, message: int | str, entry: CardEntry) -> None:
        """Record a card just posted (or rewrite its entry)."""
        if self._state is None:
            return
        value = json.dumps(
            {"approval_id": entry.approval_id, "open": entry.open, "thread_id": entry.thread_id}
        )
        try:
            await self._state.set(self._channel, self._key(conversation, message), value)
        except StorageError as exc:
            log.warning(
                "card_index_write_failed",
                channel=self._channel,
                approval_id=entry.approval_id,
                error=str(exc),
            )

    async def close(self, conversation: int | str, message: int | str, approval_id: str) -> None:
        """Record that the card was edited to its outcome (no buttons any more)."""
        await self.remember(conversation, message, CardEntry(approval_id=approval_id, open=False))

    async def find(self, conversation: int | str, message: int | str) -> CardEntry | None:
        """The card posted as this message, or ``None`` when it is not a known card."""
        if self._state is None:
            return None
        raw = await self._state.get(self._channel, self._key(conversation, message))
        return _parse(raw) if raw else None
