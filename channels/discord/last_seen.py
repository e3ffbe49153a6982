"""The last message seen in each Discord conversation, kept across restarts: where a
catch-up starts (:mod:`channels.discord.catch_up`), and which conversations it covers.

A conversation here is the Discord channel a message was posted in: a text channel, a
thread or a DM channel. Its row in the store's channel state is
``(<kind.alias>, "last_seen:<channel id>") = <message id>``, a snowflake; a conversation
with a row is one the bot watches, so a conversation it has never seen a message in is not
caught up.

What a row says must be safe to start from: every message up to it was handed to the host
(admitted) or passed over on purpose (the bot's own, a system message). discord.py handles
events concurrently, so a message still being handed over, and a catch-up still working
through a conversation, each hold the stored value below them (:class:`Hold`): the row is
the highest id seen, capped at the lowest hold, and never goes back. While a new session's
gap is open (:meth:`LastSeen.open_gap`, until the catch-up of the unseen channels is done),
a conversation that had no row as it opened is stored no higher than the gap's start.

Rows are written every :data:`WRITE_EVERY_S` while the adapter runs (:meth:`LastSeen.flushing`;
also as messages arrive, at most that often), after each catch-up, and when the adapter
stops; the channel's watermark (:mod:`channels.discord.watermark`) is written after them,
kept below any message still being handed over in a conversation that has no row yet. A
crash loses at most the last few seconds of updates: those messages are fetched again by
the next catch-up and the gateway's inbox drops them as redeliveries.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import structlog

from bot.errors import StorageError
from bot.store.channel_state import ChannelState
from channels.discord.watermark import Watermark

log = structlog.get_logger(__name__)

PREFIX = "last_seen:"
WRITE_EVERY_S = 5.0


@dataclass(slots=True, eq=False)
class Hold:
    """Keeps a conversation's stored value at or below ``floor`` until released; the
    holder raises ``floor`` as it gets through the conversation."""

    conversation: str
    floor: int


class LastSeen:
    """The last-seen message id of every conversation of one channel (``kind.alias``)."""

    def __init__(
        self,
        state: ChannelState,
        channel: str,
        *,
        watermark: Watermark | None = None,
        write_every_s: float = WRITE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._state = state
        self._watermark = watermark
        self._channel = channel
        self._write_every_s = write_every_s
        self._clock = clock
        self._seen: dict[str, int] = {}
        self._written: dict[str, int] = {}
        self._holds: dict[str, list[Hold]] = {}
        self._gap_after: int | None = None  # a new session's gap, until its catch-up is done
        self._gap_watched: frozenset[str] = frozenset()  # the conversations watched as it opened
        self._last_write = clock()
        self._writing = asyncio.Lock()
        self._loaded = False
        self._log = log.bind(channel=channel)

    async def load(self, *, again: bool = False) -> None:
        """Read the stored rows (once per process: later sessions go on from memory, unless
        ``again``: another replica held the gateway meanwhile and may have moved them on;
        what is read is merged, the higher value kept)."""
        if self._loaded and not again:
            return
        try:
            rows = await self._state.items(self._channel, PREFIX)
        except StorageError as exc:
            self._log.warning("discord_last_seen_unreadable", error=str(exc))
            return
        self._loaded = True
        for key, value in rows:
            conversation = key.removeprefix(PREFIX)
            if value.isdigit() and conversation.isdigit():
                stored = int(value)
                self._written[conversation] = stored
                self._seen[conversation] = max(stored, self._seen.get(conversation, 0))

    def conversations(self) -> dict[str, int]:
        """Every watched conversation and the highest message id seen in it."""
        return dict(self._seen)

    def open_gap(self, after: int) -> None:
        """A new session whose gap starts at ``after`` (the watermark): until
        :meth:`close_gap`, a conversation not watched now is stored no higher than ``after``,
        whatever reaches it live meanwhile (its gap messages are not fetched yet). An earlier
        gap still open is kept: it starts earlier."""
        if self._gap_after is None:
            self._gap_after = after
            self._gap_watched = frozenset(self._seen)

    def watched_before_gap(self) -> frozenset[str]:
        """The conversations watched as the open gap began (all of them when none is open):
        any other one is the catch-up's to fetch from the gap's start, even when a live
        message has reached it since."""
        if self._gap_after is None:
            return frozenset(self._seen)
        return self._gap_watched

    def close_gap(self) -> None:
        """The gap's catch-up is done."""
        self._gap_after = None
        self._gap_watched = frozenset()

    def seen(self, conversation: str, message_id: int) -> None:
        """A message was handed over, or passed over on purpose."""
        if message_id > self._seen.get(conversation, 0):
            self._seen[conversation] = message_id

    def hold(self, conversation: str, floor: int) -> Hold:
        """Keep the conversation's stored value at or below ``floor`` until :meth:`release`."""
        hold = Hold(conversation=conversation, floor=floor)
        self._holds.setdefault(conversation, []).append(hold)
        return hold

    def release(self, hold: Hold) -> None:
        holds = self._holds.get(hold.conversation, [])
        if hold in holds:
            holds.remove(hold)
        if not holds:
            self._holds.pop(hold.conversation, None)

    @contextmanager
    def delivering(self, conversation: str, message_id: int) -> Iterator[None]:
        """Around handing one message over: held below it meanwhile, seen once it is
        through (not when the hand-over raised)."""
        hold = self.hold(conversation, message_id - 1)
        try:
            yield
        finally:
            self.release(hold)
        self.seen(conversation, message_id)

    def forget(self, conversation: str) -> None:
        """Stop watching a conversation (gone, or no longer readable); its row is deleted at
        the next write."""
        self._seen.pop(conversation, None)

    def _storable(self, conversation: str) -> int:
        value = self._seen.get(conversation, 0)
        for hold in self._holds.get(conversation, ()):
            value = min(value, hold.floor)
        if self._gap_after is not None and conversation not in self._gap_watched:
            value = min(value, self._gap_after)
        return value

    async def write_if_due(self) -> None:
        """:meth:`write`, when the last one was :data:`WRITE_EVERY_S` ago or more."""
        if self._clock() - self._last_write >= self._write_every_s:
            await self.write()

    def _unwatched_floor(self) -> int | None:
        """The lowest hold in a conversation without a row: the watermark stays below it."""
        floors = [
            hold.floor
            for conversation, holds in self._holds.items()
            if conversation not in self._written
            for hold in holds
        ]
        return min(floors, default=None)

    @asynccontextmanager
    async def flushing(self) -> AsyncIterator[None]:
        """Within the block, :meth:`write` every :data:`WRITE_EVERY_S` (the watermark moves
        while the gateway is connected, messages or not)."""

        async def every_interval() -> None:
            while True:
                await asyncio.sleep(self._write_every_s)
                await self.write()

        task = asyncio.create_task(every_interval())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def write(self) -> None:
        """Store every value that moved on since the last write (and delete forgotten rows),
        then the watermark. A storage failure is logged; the values are written next time."""
        self._last_write = self._clock()
        async with self._writing:
            try:
                for conversation in [c for c in self._written if c not in self._seen]:
                    await self._state.delete(self._channel, PREFIX + conversation)
                    del self._written[conversation]
                for conversation in list(self._seen):
                    value = self._storable(conversation)
                    if value > self._written.get(conversation, 0):
                        await self._state.set(self._channel, PREFIX + conversation, str(value))
                        self._written[conversation] = value
            except StorageError as exc:
                self._log.warning("discord_last_seen_not_written", error=str(exc))
                return
            if self._watermark is not None:
                await self._watermark.write(cap=self._unwatched_floor())
