"""How far the bot saw Discord: the moment up to which it was connected and every message
posted in its guilds reached it, kept across restarts. It is what lets a catch-up
(:mod:`channels.discord.catch_up`) reach a guild channel the bot has no last-seen row for
(:mod:`channels.discord.last_seen`): one whose first message came while the bot was away.

Stored as one snowflake per channel (``(<kind.alias>, "catch_up_watermark")``), the id a
message posted at that moment would have, so it compares directly with a channel's
``last_message_id``. The claim it makes: every message with an id at or below it, in a
channel without a last-seen row, was handed to the host or passed over on purpose (a
channel with a row is covered by its row). So the value moves only while the gateway is
connected (a resumed session gets Discord's replay of the gap; a new session does not, and
:meth:`Watermark.open_gap` holds the value where it was until the catch-up of that gap is
done), lags the clock by :data:`MARGIN_S` (a message posted just before a crash may not
have reached the bot yet), stays below any message still being handed over in a
conversation without a row (the cap :class:`~channels.discord.last_seen.LastSeen` passes),
and never goes back.

It is written with the last-seen rows, after them: as soon as the first start ever connects
(a start killed within seconds still leaves one), every
:data:`~channels.discord.last_seen.WRITE_EVERY_S` while the adapter runs
(:meth:`LastSeen.flushing`), after each catch-up and at the stop. No stored value (the
first start ever) means the bot knows nothing of what was posted before it connected: a
catch-up fetches nothing from unseen channels, and the first value stored is never below
the moment it first connected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import discord
import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState

log = structlog.get_logger(__name__)

KEY = "catch_up_watermark"
#: How far the value lags the clock: messages posted this recently may still be on their
#: way to the bot.
MARGIN_S = 10.0


@dataclass(slots=True, eq=False)
class Gap:
    """A new session's gap: nothing posted after ``after`` is known to have been seen, until
    the catch-up closes it."""

    after: int


class Watermark:
    """The watermark of one channel (``kind.alias``)."""

    def __init__(
        self,
        state: ChannelState,
        channel: str,
        *,
        margin_s: float = MARGIN_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._state = state
        self._channel = channel
        self._margin_s = margin_s
        self._clock = clock
        self._stored: int | None = None
        self._connected = False
        self._seen_until: float | None = None  # while disconnected: when the gateway was lost
        self._first_connected: float | None = None  # the first start ever: when it connected
        self._gap: Gap | None = None
        self._loaded = False
        self._log = log.bind(channel=channel)

    @property
    def stored(self) -> int | None:
        """The value last read or written; None before the first start ever wrote one."""
        return self._stored

    async def load(self, *, again: bool = False) -> None:
        """Read the stored value (once per process, unless ``again``: another replica may
        have moved it on; the higher value is kept)."""
        if self._loaded and not again:
            return
        try:
            value = await self._state.get(self._channel, KEY)
        except StorageError as exc:
            self._log.warning("discord_watermark_unreadable", error=str(exc))
            return
        self._loaded = True
        if value is not None and value.isdigit():
            self._stored = max(int(value), self._stored or 0)

    def connected(self) -> None:
        """The gateway is up (a new session, after :meth:`open_gap`, or a resumed one)."""
        if self._stored is None and self._first_connected is None:
            # the first start ever: what came before it is not to be fetched, margin or not
            self._first_connected = self._clock()
        self._connected = True

    def disconnected(self) -> None:
        """The gateway is down: the value stops moving."""
        if self._connected:
            self._seen_until = self._clock()
        self._connected = False

    def open_gap(self) -> Gap | None:
        """A new session: hold the value where it is stored until :meth:`close_gap` (an
        earlier gap still open is kept: it starts earlier). None when no value was ever
        stored: nothing is known of what came before."""
        if self._gap is None and self._stored is not None:
            self._gap = Gap(after=self._stored)
        return self._gap

    def close_gap(self, gap: Gap) -> None:
        """The gap's catch-up is done (what could not be fetched is watched by a row)."""
        if self._gap is gap:
            self._gap = None

    def value(self, cap: int | None = None) -> int | None:
        """What may be stored now, below ``cap`` (the lowest message still being handed over
        in a conversation without a row), or None when there is nothing new to claim."""
        until = self._clock() if self._connected else self._seen_until
        if until is None:
            return None
        moment = datetime.fromtimestamp(
            max(until - self._margin_s, self._first_connected or 0), UTC
        )
        value = discord.utils.time_snowflake(moment)
        for limit in (cap, self._gap.after if self._gap is not None else None):
            if limit is not None:
                value = min(value, limit)
        return value

    async def write(self, cap: int | None = None) -> None:
        """Store :meth:`value` when it moved on. A storage failure is logged; the value is
        written next time."""
        value = self.value(cap)
        if value is None or (self._stored is not None and value <= self._stored):
            return
        try:
            await self._state.set(self._channel, KEY, str(value))
        except StorageError as exc:
            self._log.warning("discord_watermark_not_written", error=str(exc))
            return
        self._stored = value
