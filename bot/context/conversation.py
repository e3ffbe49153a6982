"""A turn's view of its conversation: kept group context and the thread's earlier messages.

:class:`ConversationContext` is shared by the gateway (which keeps unaddressed messages and
applies edits and deletions) and the agent runner (which asks for a turn's lines before the
turn starts). A turn in a direct conversation, a background run, or a channel whose
``context`` is off costs nothing: no database trip, no platform call. Where the channel
says which conversation the person has open (its ``viewing``, Slack's assistant threads),
:meth:`ConversationContext.viewed` asks it, in any conversation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine

from bot.channel import Channel, ViewedPlace
from bot.config import ChannelCommon, Settings
from bot.context.keeping import GroupContextKeeper
from bot.context.threads import ThreadCache, earlier_line
from bot.envelope import ChannelRef, IngressEnvelope
from bot.store import Store
from bot.store.context_lines import MAX_LINE_CHARS, ContextLine


class ConversationContext:
    """Group context and thread history for the turns of one process (module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        settings: Callable[[], Settings],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._settings = settings
        self._clock = clock
        self.keeper = GroupContextKeeper(store)
        self.threads = ThreadCache()

    def _channel(self, ref: ChannelRef) -> ChannelCommon | None:
        return self._settings().channels.get(ref.kind, ref.alias)

    def keeps(self, envelope: IngressEnvelope) -> ChannelCommon | None:
        """The alias's settings when ``envelope`` is kept for context only, else None."""
        cfg = self._channel(envelope.channel)
        if cfg is None or not self.keeper.keeps(envelope, cfg):
            return None
        return cfg

    async def keep(self, envelope: IngressEnvelope, cfg: ChannelCommon) -> None:
        await self.keeper.keep(envelope, cfg)

    def _in_use(self, ref: ChannelRef) -> bool:
        cfg = self._channel(ref)
        if cfg is None:
            return False
        return cfg.context.group_messages > 0 or cfg.context.thread_messages > 0

    async def edited(self, envelope: IngressEnvelope) -> bool:
        """A message was edited: its kept line and cached thread line say what it says now.
        True when a kept line was rewritten and the edit needs nothing more (the message
        still is not addressed to the bot); an edit that addresses the bot drops the line
        and is admitted as a message."""
        if not self._in_use(envelope.channel):
            return False
        channel = str(envelope.channel)
        self.threads.edited(channel, envelope.message_id, envelope.text[:MAX_LINE_CHARS])
        if envelope.addressed_to_bot:
            await self._store.context_lines.drop(channel, envelope.message_id)
            return False
        return await self._store.context_lines.edit(channel, envelope.message_id, envelope.text)

    async def dropped(self, ref: ChannelRef, message_id: str) -> None:
        """A message was deleted: its kept line and cached thread line go."""
        if not self._in_use(ref):
            return
        self.threads.dropped(str(ref), message_id)
        await self.keeper.dropped(ref, message_id)

    def for_turn(
        self, envelope: IngressEnvelope, channel: Channel | None
    ) -> Coroutine[object, object, tuple[ContextLine, ...]] | None:
        """The lines a turn answering ``envelope`` is shown, oldest first: the thread's
        earlier messages (or, where the platform keeps no history for bots, the message it
        replied to), then the kept group context (a message in both, once). None, with
        nothing to await, where it can be shown none: a direct conversation, a background
        run, a channel whose context is off (most turns: no coroutine, no cancel hook)."""
        if envelope.is_direct or envelope.background:
            return None
        cfg = self._channel(envelope.channel)
        if cfg is None:
            return None
        options = cfg.context
        if not options.thread_messages and not options.keeps_in(envelope.conversation_id):
            return None
        return self._lines(envelope, channel, cfg)

    async def _lines(
        self, envelope: IngressEnvelope, channel: Channel | None, cfg: ChannelCommon
    ) -> tuple[ContextLine, ...]:
        options = cfg.context
        lines: list[ContextLine] = []
        history = channel.history if channel is not None else None
        replies = channel.replied if channel is not None else None
        if options.thread_messages and history is not None:
            lines += await self.threads.lines(history, envelope, cfg)
        elif options.thread_messages and replies is not None:
            replied = replies.replied_to(envelope)
            if replied is not None and len(replied.text) <= options.thread_chars:
                lines.append(earlier_line(envelope, replied, cfg))
        if options.keeps_in(envelope.conversation_id):
            query = self._store.context_lines.window(
                str(envelope.channel),
                envelope.conversation_id,
                now=self._clock(),
                before=envelope.received_at.timestamp(),
                limit=options.group_messages,
            )
            seen = {line.message_id for line in lines}
            kept = await self._store.context_lines.read(query)
            lines += [line for line in kept if line.message_id not in seen]
        return tuple(lines)

    def viewed(
        self, envelope: IngressEnvelope, channel: Channel | None
    ) -> Coroutine[object, object, ViewedPlace | None] | None:
        """What finds the conversation the author of ``envelope`` has open, where the
        channel says (its ``viewing``); None, with nothing to await, elsewhere and for a
        background run."""
        if envelope.background or channel is None or channel.viewing is None:
            return None
        return channel.viewing.viewed_place(envelope)
