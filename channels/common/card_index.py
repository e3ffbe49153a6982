"""Which approval a card message belongs to, remembered across restarts; one index for every
adapter.

A reaction or a reply names a message, not an approval. Each card an adapter posts is
recorded as ``card:{conversation}:{message}`` in the store's per-channel state, where
``conversation`` and ``message`` are the platform's own ids for where the card is (Slack:
channel and ``ts``; Telegram: chat and message number; Discord: channel and message). The
entry holds the approval id, whether the card still offers buttons, and the card's thread
(where a private answer to a reaction goes). A decided card stays known but closed:
reactions on it count for nothing, a reply to it is still recognised as one.

An entry also says what the message showed: ``cut`` when it hid part of the request (an
approval from it is refused until it comes from a full view), ``full_view`` when it is (part
of) a view that showed the whole request. The messages of an approval's full views are
listed under ``card:views:{approval}`` so that they lose their buttons once the approval is
decided (:meth:`CardIndex.add_views`, :meth:`CardIndex.take_views`).

The index is an aid, not the truth: the approval row decides. A failed write is logged and
the card still works through its buttons, whose data carries the approval id. Rows written
before the index was shared are read where they can be (Telegram's fully, Slack's without
their thread); any other row that cannot be read counts as no entry. The daemon prunes
``card:`` rows older than a week at start.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "card:"
VIEWS_PREFIX = f"{KEY_PREFIX}views:"


@dataclass(frozen=True, slots=True, kw_only=True)
class CardEntry:
    """One posted card: its approval, whether its buttons are still offered, its thread,
    whether it hid part of the request (``cut``) or is a full view (``full_view``)."""

    approval_id: str
    open: bool = True
    thread_id: str | None = None
    cut: bool = False
    full_view: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewMessage:
    """One message of a full view; ``buttons`` when it carries the view's own buttons."""

    conversation: str
    message: str
    buttons: bool


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
        cut=data.get("cut") is True,
        full_view=data.get("full_view") is True,
    )


def _parse_views(raw: str | None) -> tuple[ViewMessage, ...]:
    try:
        data = json.loads(raw) if raw else []
    except ValueError:
        return ()
    views = []
    for item in data if isinstance(data, list) else ():
        if isinstance(item, list) and len(item) == 3:
            conversation, message, buttons = item
            views.append(
                ViewMessage(
                    conversation=str(conversation), message=str(message), buttons=buttons is True
                )
            )
    return tuple(views)


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
        value: dict[str, object] = {
            "approval_id": entry.approval_id,
            "open": entry.open,
            "thread_id": entry.thread_id,
        }
        if entry.cut:
            value["cut"] = True
        if entry.full_view:
            value["full_view"] = True
        await self._write(self._key(conversation, message), json.dumps(value), entry.approval_id)

    async def _write(self, key: str, value: str, approval_id: str) -> None:
        if self._state is None:
            return
        try:
            await self._state.set(self._channel, key, value)
        except StorageError as exc:
            log.warning(
                "card_index_write_failed",
                channel=self._channel,
                approval_id=approval_id,
                error=str(exc),
            )

    async def close(self, conversation: int | str, message: int | str, approval_id: str) -> None:
        """Record that the card was edited to its outcome (no buttons any more); what the
        entry says of the message (thread, cut, full view) is kept."""
        known = await self.find(conversation, message)
        if known is None or known.approval_id != approval_id:
            known = CardEntry(approval_id=approval_id)
        await self.remember(conversation, message, replace(known, open=False))

    async def add_views(self, approval_id: str, views: Iterable[ViewMessage]) -> None:
        """Record the messages of a full view just posted for ``approval_id``: each as an
        open ``full_view`` entry, and all in the approval's list of views."""
        if self._state is None:
            return
        added = tuple(views)
        for view in added:
            entry = CardEntry(approval_id=approval_id, full_view=True)
            await self.remember(view.conversation, view.message, entry)
        key = f"{VIEWS_PREFIX}{approval_id}"
        listed = _parse_views(await self._state.get(self._channel, key)) + added
        value = json.dumps([[v.conversation, v.message, v.buttons] for v in listed])
        await self._write(key, value, approval_id)

    async def take_views(self, approval_id: str) -> tuple[ViewMessage, ...]:
        """The messages of every full view of ``approval_id`` not yet taken; the list is
        emptied (the caller closes them)."""
        if self._state is None:
            return ()
        key = f"{VIEWS_PREFIX}{approval_id}"
        views = _parse_views(await self._state.get(self._channel, key))
        if views:
            try:
                await self._state.delete(self._channel, key)
            except StorageError as exc:
                log.warning(
                    "card_index_write_failed",
                    channel=self._channel,
                    approval_id=approval_id,
                    error=str(exc),
                )
        return views

    async def find(self, conversation: int | str, message: int | str) -> CardEntry | None:
        """The card posted as this message, or ``None`` when it is not a known card."""
        if self._state is None:
            return None
        raw = await self._state.get(self._channel, self._key(conversation, message))
        return _parse(raw) if raw else None
