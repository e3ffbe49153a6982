"""The threads the Discord adapter knows about: those to open, and those it has posted in.

With ``thread_per_request`` an inbound guild message outside a thread gets a thread opened
from it, but only when the first answer goes out (a message that is never answered gets no
thread). The inbound side records the pending thread; the outbound side opens it before
posting and records every thread it posts in (a message in such a thread counts as addressed
to the bot when ``thread_counts_as_mention``). Both records are bounded, oldest dropped first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass

import discord
import structlog

from channels.discord.client import GatewayClient

log = structlog.get_logger(__name__)

PENDING_LIMIT = 1024
POSTED_LIMIT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingThread:
    """A thread to open from a request message before the first answer is posted."""

    channel_id: int
    guild_id: int
    name: str


class ThreadBook:
    """Pending and posted-in threads of one adapter. Not shared between channels."""

    def __init__(self, channel: str) -> None:
        self._log = log.bind(channel=channel)
        self._pending: OrderedDict[str, PendingThread] = OrderedDict()
        self._posted: OrderedDict[str, None] = OrderedDict()
        self._lock = asyncio.Lock()

    @property
    def posted(self) -> Collection[str]:
        """Thread ids the adapter has posted in (most recent last)."""
        return self._posted.keys()

    def expect(self, thread_id: str, pending: PendingThread) -> None:
        """Open ``thread_id`` from its starter message before the first post into it."""
        self._pending[thread_id] = pending
        if len(self._pending) > PENDING_LIMIT:
            self._pending.popitem(last=False)

    async def before_posting(self, client: GatewayClient, thread_id: str) -> None:
        """Open the thread if it is still pending, and remember that the adapter posts in it."""
        if thread_id in self._pending:
            await self._open(client, thread_id)
        self._posted[thread_id] = None
        self._posted.move_to_end(thread_id)
        if len(self._posted) > POSTED_LIMIT:
            self._posted.popitem(last=False)

    async def _open(self, client: GatewayClient, thread_id: str) -> None:
        async with self._lock:
            pending = self._pending.pop(thread_id, None)
            if pending is None:
                return  # another post opened it while this one waited for the lock
            parent = client.get_partial_messageable(pending.channel_id, guild_id=pending.guild_id)
            try:
                await parent.get_partial_message(int(thread_id)).create_thread(
                    name=pending.name, auto_archive_duration=1440
                )
            except discord.HTTPException as exc:  # e.g. 160004: a thread already exists
                self._log.warning("discord_thread_open_failed", status=exc.status, code=exc.code)
