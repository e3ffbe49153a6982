"""What was posted while the bot was away, fetched when a new gateway session starts.

Discord replays missed events only to a session it *resumes*. A new session — every start,
and a reconnect Discord would not resume (an invalidated or expired session: discord.py
identifies again and fires ``on_ready``, not ``on_resumed``) — begins with nothing about
the gap. So at the start of each new session (:meth:`CatchUp.session_started`, on the
gateway's READY, before the session's first message) every watched conversation (one with a
last-seen row, :mod:`channels.discord.last_seen`: the bot has seen a message there) is
marked to catch up from its last-seen message, and the gap is opened on the channel's
watermark (:mod:`channels.discord.watermark`: how far the bot saw). Once discord.py has the
guilds (``on_ready``), :meth:`CatchUp.run` fetches each watched conversation's history after
that message with discord.py's REST (``history(after=…, oldest_first=True)``), then every
*unseen* channel: a text channel or active thread of an allowed guild, in discord.py's
guild cache, that the bot may read (``read_message_history``), with no last-seen row and a
cached ``last_message_id`` newer than the watermark — a channel whose first message came
while the bot was away — from the watermark. "No last-seen row" is read as the gap opened
(:meth:`~channels.discord.last_seen.LastSeen.watched_before_gap`): a live message (or the
bot's own answer, posted by another replica) reaching such a channel while the catch-up works
through the watched ones does not make it watched and skipped, and until the gap closes its
row claims no more than the gap's start, so what was posted there in the gap is fetched,
and after a crash still would be. Every message goes to the same inbound path
as a live one (:meth:`~channels.discord.inbound.InboundMessages.message_created`: the same
filters and envelope; the gateway decides what is addressed to the bot), oldest first.

Not caught up: anything before the first watermark (the first start ever stores none:
the bot does not answer what was posted before it was ever connected), and a DM channel it
has never seen (a bot cannot list its DM channels; the next live message there is
answered, and watches it from then on).

Bounds: nothing older than ``catch_up_max_age`` (the ``after`` id is at least a snowflake
of that moment; 0 turns catch-up off) and at most ``catch_up_max_messages`` per
conversation, the oldest first (reaching it is logged: the rest of that gap is not
fetched). A conversation whose cached channel says its last message is not newer costs no
request, so a channel with no activity since the watermark costs nothing; one Discord no
longer shows the bot (404, 403) stops being watched. A conversation whose fetch failed
stays marked, and its stored last-seen value stays where it was (an unseen channel gets a
row at the watermark), so the next session (or start) tries again; the watermark does not
move past the gap until its catch-up is done.

A message that arrives live while its conversation is being caught up is delivered at once,
possibly before older caught-up ones. A message delivered twice (live and fetched) is
dropped by the inbound side's sighting record or the gateway's inbox.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import aiohttp
import discord
import structlog

from bot.envelope import ChannelRef
from channels.discord.client import Connection, GatewayClient
from channels.discord.config import DiscordChannelConfig
from channels.discord.inbound import InboundMessages
from channels.discord.last_seen import Hold, LastSeen
from channels.discord.watermark import Gap, Watermark

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CaughtUp:
    """What one catch-up did: conversations looked at, messages handed over, and
    conversations that could not be fetched (still marked); ``off`` when
    ``catch_up_max_age`` is 0."""

    conversations: int = 0
    messages: int = 0
    failed: int = 0
    off: bool = False

    def describe(self) -> str:
        if self.off:
            return "catch-up off"
        text = f"caught up on {self.conversations} conversation(s), {self.messages} message(s)"
        return text + (f"; {self.failed} to retry" if self.failed else "")


class CatchUp:
    """The catch-up of one adapter: conversations still to catch up, and the fetching."""

    def __init__(
        self,
        ref: ChannelRef,
        config: DiscordChannelConfig,
        connection: Connection,
        last_seen: LastSeen,
        watermark: Watermark,
        inbound: InboundMessages,
    ) -> None:
        self._config = config
        self._connection = connection
        self._last_seen = last_seen
        self._watermark = watermark
        self._gap: Gap | None = None
        self._inbound = inbound
        self._pending: dict[str, Hold] = {}
        self._lock = asyncio.Lock()
        self._running: set[asyncio.Task[object]] = set()
        self._log = log.bind(channel=str(ref))

    @property
    def enabled(self) -> bool:
        return self._config.catch_up_max_age > 0

    def session_started(self) -> None:
        """A new session: every watched conversation catches up from its last-seen message
        (one still marked from an earlier session keeps its earlier start), and the
        unseen channels from the watermark, held meanwhile. Synchronous, so it runs before
        the session's first message is handled."""
        if not self.enabled:
            return
        self._gap = self._watermark.open_gap()
        if self._gap is not None:
            self._last_seen.open_gap(self._gap.after)
        for conversation, seen in self._last_seen.conversations().items():
            if conversation not in self._pending:
                self._pending[conversation] = self._last_seen.hold(conversation, seen)

    async def run(self) -> CaughtUp | None:
        """Catch up every marked conversation, most recently active first; one run at a
        time; None when the client is gone. Runs in discord.py's
        ``on_ready`` task, which :meth:`stop` cancels."""
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            async with self._lock:
                return await self._run()
        finally:
            if task is not None:
                self._running.discard(task)

    async def _run(self) -> CaughtUp | None:
        client = self._connection.connected()
        if client is None:
            return None
        if not self.enabled:
            return CaughtUp(off=True)
        since = datetime.now(UTC) - timedelta(seconds=self._config.catch_up_max_age)
        horizon = discord.utils.time_snowflake(since)
        order = sorted(self._pending.items(), key=lambda item: item[1].floor, reverse=True)
        self._log.info("discord_catch_up_started", conversations=len(order))
        messages = failed = 0
        for conversation, hold in order:
            fetched = await self._conversation(client, hold, max(hold.floor, horizon))
            if fetched is None:
                failed += 1
                continue
            messages += fetched
            del self._pending[conversation]
            self._last_seen.release(hold)
        unseen = await self._unseen(client, horizon)
        await self._last_seen.write()
        done = CaughtUp(
            conversations=len(order) + unseen.conversations,
            messages=messages + unseen.messages,
            failed=failed + unseen.failed,
        )
        self._log.info(
            "discord_catch_up_finished",
            conversations=done.conversations,
            messages=messages,
            failed=failed,
        )
        return done

    async def _unseen(self, client: GatewayClient, horizon: int) -> CaughtUp:
        """Catch up the unseen channels with activity after the gap's start (or ``horizon``,
        when later), then close the gap. One that could not be fetched is watched from
        there (a row at that id, and marked) so the next session tries again."""
        gap = self._gap
        if gap is None:
            return CaughtUp()
        after = max(gap.after, horizon)
        channels = self._unseen_channels(client, after)
        self._log.info(
            "discord_catch_up_unseen",
            channels=[str(c.id) for c in channels],
            after=after,
        )
        messages = failed = 0
        for channel in channels:
            conversation = str(channel.id)
            hold = self._last_seen.hold(conversation, after)
            fetched = await self._conversation(client, hold, after)
            if fetched is None:
                failed += 1
                self._last_seen.seen(conversation, after)
                self._pending[conversation] = hold
                continue
            messages += fetched
            self._last_seen.release(hold)
        await self._last_seen.write()  # rows for what failed before the gap closes
        self._watermark.close_gap(gap)
        self._last_seen.close_gap()
        self._gap = None
        return CaughtUp(conversations=len(channels), messages=messages, failed=failed)

    def _unseen_channels(
        self, client: GatewayClient, after: int
    ) -> list[discord.TextChannel | discord.Thread]:
        """The cached channels of allowed guilds the bot may read, without a row, whose
        last message is newer than ``after`` (asks Discord nothing)."""
        # not what a live message reached since the gap began: its gap is still unfetched
        watched = self._last_seen.watched_before_gap() | self._pending.keys()
        allowed = self._config.allowed_guilds
        found: list[discord.TextChannel | discord.Thread] = []
        for guild in client.guilds:
            if allowed and str(guild.id) not in allowed:
                continue
            me = guild.me
            readable: list[discord.TextChannel | discord.Thread] = [*guild.text_channels]
            readable.extend(guild.threads)
            for channel in readable:
                last = channel.last_message_id
                if last is None or last <= after or str(channel.id) in watched:
                    continue
                if me is not None:
                    can = channel.permissions_for(me)
                    if not (can.read_messages and can.read_message_history):
                        continue
                found.append(channel)
        return found

    async def _conversation(self, client: GatewayClient, hold: Hold, after: int) -> int | None:
        """Fetch and hand over one conversation's messages after ``after``: how many; None
        when Discord could not be asked (it stays marked)."""
        conversation = hold.conversation
        limit = self._config.catch_up_max_messages
        fetched = 0
        try:
            channel = client.get_channel(int(conversation))
            if channel is None:
                channel = await client.fetch_channel(int(conversation))
            last = getattr(channel, "last_message_id", None)
            if isinstance(last, int) and last <= after:
                return 0
            if not isinstance(channel, discord.abc.Messageable):
                self._last_seen.forget(conversation)
                return 0
            history = channel.history(after=discord.Object(after), oldest_first=True, limit=limit)
            async for message in history:
                fetched += 1
                await self._inbound.message_created(message, fetched=True)
                hold.floor = message.id
        except (discord.NotFound, discord.Forbidden) as exc:
            self._log.info(
                "discord_catch_up_unreadable", conversation=conversation, status=exc.status
            )
            self._last_seen.forget(conversation)
            return fetched
        except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as exc:
            self._log.warning(
                "discord_catch_up_failed", conversation=conversation, error=type(exc).__name__
            )
            return None
        if fetched:
            self._log.info("discord_caught_up", conversation=conversation, messages=fetched)
        if fetched >= limit:
            self._log.warning(
                "discord_catch_up_limit_reached", conversation=conversation, limit=limit
            )
        return fetched

    async def stop(self) -> None:
        """Cancel a running catch-up and wait for it (the adapter is stopping)."""
        running = set(self._running)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)
