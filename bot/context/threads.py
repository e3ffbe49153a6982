"""Thread history: the earlier messages of a thread the bot is mentioned in, read once.

Mentioned in a thread (a Slack thread, a Discord thread or reply chain), the bot asks the
channel for the thread's messages before the mention, up to its own first message there
(:class:`bot.channel.ThreadHistory`; what came after is in the session's history), bounded
by ``context.thread_messages`` and ``context.thread_chars``. The answer is cached per thread
in memory (:data:`CAPACITY` threads, least recently used first out), so a long conversation
in the thread does not read it again every turn; a restart reads it once more. An edit or a
deletion of a cached message updates or drops its line. Messages of other bots are left out
where the alias ignores them, as live ones are; a sender outside ``allowed_users`` is marked.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace

import structlog

from bot.channel import EarlierMessage, ThreadHistory
from bot.config import ChannelCommon
from bot.envelope import IngressEnvelope
from bot.store.context_lines import ContextLine

log = structlog.get_logger(__name__)

CAPACITY = 256

ThreadKey = tuple[str, str, str]


def thread_key(envelope: IngressEnvelope) -> ThreadKey:
    """The cache key of the thread ``envelope`` was written in (a reply chain: its message)."""
    thread = envelope.thread_id or f"message:{envelope.message_id}"
    return (str(envelope.channel), envelope.conversation_id, thread)


class ThreadCache:
    """Earlier messages of threads, read from the channel once per thread."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._threads: OrderedDict[ThreadKey, tuple[ContextLine, ...]] = OrderedDict()
        self.fetches = 0

    async def lines(
        self, history: ThreadHistory, envelope: IngressEnvelope, cfg: ChannelCommon
    ) -> tuple[ContextLine, ...]:
        """The thread's earlier messages as context lines, oldest first (cached)."""
        key = thread_key(envelope)
        cached = self._threads.get(key)
        if cached is not None:
            self._threads.move_to_end(key)
            return cached
        options = cfg.context
        self.fetches += 1
        earlier = await history.earlier_messages(
            envelope, limit=options.thread_messages, max_chars=options.thread_chars
        )
        if earlier is None:
            log.warning("thread_history_unavailable", conversation_id=envelope.conversation_id)
            return ()
        lines = tuple(
            earlier_line(envelope, message, cfg)
            for message in earlier
            if message.from_this_bot or not (message.sender.is_bot and cfg.ignore_other_bots)
        )
        self._threads[key] = lines
        if len(self._threads) > self._capacity:
            self._threads.popitem(last=False)
        log.info("thread_history_read", messages=len(lines))
        return lines

    def edited(self, channel: str, message_id: str, text: str) -> None:
        """A message was edited: its cached line (if any) says what it says now."""
        for key, lines in self._threads.items():
            if key[0] == channel and any(line.message_id == message_id for line in lines):
                self._threads[key] = tuple(
                    replace(line, text=text) if line.message_id == message_id else line
                    for line in lines
                )

    def dropped(self, channel: str, message_id: str) -> None:
        """A message was deleted: its cached line (if any) goes."""
        for key, lines in self._threads.items():
            if key[0] == channel and any(line.message_id == message_id for line in lines):
                self._threads[key] = tuple(line for line in lines if line.message_id != message_id)


def earlier_line(
    envelope: IngressEnvelope, message: EarlierMessage, cfg: ChannelCommon
) -> ContextLine:
    """``message``, read back from ``envelope``'s thread (or the message it replied to), as a
    context line."""
    sender = message.sender
    return ContextLine(
        channel=str(envelope.channel),
        conversation_id=envelope.conversation_id,
        thread_id=envelope.thread_id or "",
        message_id=message.message_id,
        sender_id=sender.id,
        sender_name=sender.display_name,
        member="*" in cfg.allowed_users or sender.id in cfg.allowed_users,
        is_bot=message.from_this_bot,
        text=message.text,
        at=message.at,
    )
