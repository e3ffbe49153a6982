"""Slack message events held in the store from before their ack until the host has them.

Slack forgets an event once it is acknowledged, so an event acknowledged and then lost in a
crash is lost for good. The listener therefore writes the event callback as it came
(``journal:<event_id>`` in the store's per-channel state, :class:`~bot.store.channel_state.
ChannelState`; ``journal:<channel>:<ts>`` for a payload without an event id) before it
returns and bolt acknowledges; the worker deletes the row once the host has taken the event
(:meth:`~bot.channel.ChannelHost.deliver` returns once the message is in the inbox). Rows
left by a crash are read back at the next start (:meth:`EventJournal.left_over`, oldest
first) and handed over again; the gateway's inbox dedupe drops those it had already taken.

Without a store (an adapter built outside the daemon, in some tests) the journal keeps
nothing and an event lives only in the worker's queue, as before the journal existed.

:class:`Arrivals` is the in-memory half: which events arrived recently (by ``event_id``, and
by ``channel:ts`` for the ``message``/``app_mention`` pair of one mention) and whether the
first copy is stored yet. A copy that arrives while the first is still being written waits
for that write, so that no copy is acknowledged before the event is stored.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "journal:"


def journal_key(body: Mapping[str, Any]) -> str:
    """The row an event callback is kept under: its ``event_id``, else ``channel:ts``."""
    event_id = str(body.get("event_id") or "")
    if event_id:
        return KEY_PREFIX + event_id
    event = body.get("event")
    event = event if isinstance(event, Mapping) else {}
    return f"{KEY_PREFIX}{event.get('channel') or ''}:{event.get('ts') or ''}"


class EventJournal:
    """The stored events of one Slack channel alias (module docstring)."""

    def __init__(self, state: ChannelState | None, channel: str) -> None:
        self._state = state
        self._channel = channel

    async def record(self, key: str, body: Mapping[str, Any]) -> None:
        """Store ``body`` under ``key``; raises :class:`~bot.errors.StorageError` when it
        cannot, and then the event must not be acknowledged."""
        if self._state is not None:
            await self._state.set(self._channel, key, json.dumps(body, separators=(",", ":")))

    async def done(self, key: str) -> None:
        """Forget an event the host has taken. A failed delete is logged: the row is handed
        over again at the next start, and the gateway drops it as a redelivery."""
        if self._state is None:
            return
        try:
            await self._state.delete(self._channel, key)
        except StorageError as exc:
            log.warning("slack_journal_delete_failed", channel=self._channel, error=str(exc))

    async def left_over(self) -> list[tuple[str, dict[str, Any]]]:
        """The stored events, oldest first. A row that cannot be read is logged and deleted."""
        if self._state is None:
            return []
        rows = await self._state.items(self._channel, KEY_PREFIX)
        events: list[tuple[str, dict[str, Any]]] = []
        for key, value in rows:
            try:
                body = json.loads(value)
            except ValueError:
                body = None
            if isinstance(body, dict):
                events.append((key, body))
            else:
                log.warning("slack_journal_unreadable", channel=self._channel, key=key)
                await self.done(key)
        return events


class Arrivals:
    """The events that arrived recently, and whether the first copy of each is stored
    (bounded: the oldest is forgotten first)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._stored: OrderedDict[str, asyncio.Future[bool]] = OrderedDict()

    def claim(self, keys: Iterable[str]) -> asyncio.Future[bool] | None:
        """None when none of ``keys`` arrived before: they are now this arrival's, to
        :meth:`settle`. Otherwise the earlier arrival's outcome, which resolves to whether it
        was stored (every key is then linked to it)."""
        wanted = [k for k in keys if k]
        earlier = next((self._stored[k] for k in wanted if k in self._stored), None)
        if earlier is not None and earlier.done() and not earlier.result():
            earlier = None  # it could not be stored: this copy is taken in anew
        outcome = earlier or asyncio.get_running_loop().create_future()
        for key in wanted:
            self._stored[key] = outcome
            self._stored.move_to_end(key)
        while len(self._stored) > self._size:
            self._stored.popitem(last=False)
        return earlier

    def settle(self, keys: Iterable[str], *, stored: bool) -> None:
        """Record the outcome of an arrival :meth:`claim` gave to the caller. Keys of an event
        that could not be stored are forgotten, so Slack's retry of it is taken in anew."""
        for key in keys:
            outcome = self._stored.get(key)
            if outcome is None:
                continue
            if not outcome.done():
                outcome.set_result(stored)
            if not stored:
                del self._stored[key]
