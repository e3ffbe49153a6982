"""Answers streamed into an assistant thread with Slack's native streaming methods.

Where the agent's model streams and the target is an assistant thread
(:mod:`channels.slack.assistant`, with ``assistant.stream`` on), the progress sink hands the
answer's text here as it is written (:class:`~bot.channel.AnswerStream`, throttled like a
progress edit) instead of drawing it in the progress message: the first piece starts a
message with ``chat.startStream``, later ones go through ``chat.appendStream`` (each call at
most :data:`MAX_MARKDOWN` characters, Slack's limit of ``markdown_text``).

A streamed message carries no metadata, and the delivery check finds the bot's replies by
their metadata (:mod:`channels.slack.delivery_check`). So the stream's ``ts`` is recorded in
the store as soon as ``chat.startStream`` returns (``stream:<channel>:<thread_ts>`` in the
channel state, one write; read back when the channel starts), and the turn's reply, sent
keyed by the outbox ledger, *finishes* that message (:meth:`SlackAnswerStreams.finish`):
``chat.stopStream``, then ``chat.update`` with the reply's first chunk and its metadata; the
rest of a long reply is posted after it as usual. The same happens when start-up recovery
sends a reply cut off by a crash: the message streamed before the crash is finished, not
left half-written beside a new one. The row is deleted once the message is finished.

Nothing here may lose a reply: a stream that cannot start or goes on no longer (Slack ends a
stream about five minutes after it began: ``message_not_in_streaming_state``) is given up,
and the sink shows the rest of the draft in its progress message; a stream message that
cannot be finished is left as it is and the reply is posted as a new message.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import partial

import structlog

from bot.crashpoints import crash_point
from bot.envelope import ChannelRef, DeliveryTarget, SentMessage
from bot.errors import ChannelAuthError, ChannelError, StorageError
from bot.store.channel_state import ChannelState
from channels.slack.api import SlackCallFailed, SlackWebApi
from channels.slack.assistant import SlackAssistant
from channels.slack.delivery_check import reply_metadata

log = structlog.get_logger(__name__)

KEY_PREFIX = "stream:"
#: Slack's limit of ``markdown_text`` in one stream call.
MAX_MARKDOWN = 12_000
#: How many open streams are kept in memory (one per thread with a turn running).
REMEMBERED = 1024
#: Slack's answer to a stream call on a message no longer streaming.
STREAM_OVER = "message_not_in_streaming_state"


def _key(channel: str, thread_ts: str) -> str:
    return f"{KEY_PREFIX}{channel}:{thread_ts}"


def pieces(text: str, size: int = MAX_MARKDOWN) -> list[str]:
    """``text`` in pieces of at most ``size`` characters."""
    return [text[i : i + size] for i in range(0, len(text), size)]


class SlackAnswerStreams:
    """The answer streams of one Slack channel alias (module docstring)."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        api: SlackWebApi,
        assistant: SlackAssistant,
        state: ChannelState | None,
        enabled: bool,
    ) -> None:
        self._ref = ref
        self._api = api
        self._assistant = assistant
        self._state = state
        self._enabled = enabled
        #: the open stream of each (channel, thread_ts): its message's ts
        self._open: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._loaded = state is None

    async def _load(self) -> None:
        """Read back the streams a crash left open, once, at the first use (recovery may
        send a reply before the channel has connected)."""
        if self._loaded or self._state is None:
            return
        self._loaded = True
        for key, ts in await self._state.items(str(self._ref), KEY_PREFIX):
            channel, _, thread_ts = key.removeprefix(KEY_PREFIX).partition(":")
            if channel and thread_ts and ts:
                self._remember((channel, thread_ts), ts)
        if self._open:
            log.info("slack_streams_left_open", channel=str(self._ref), streams=len(self._open))

    def _remember(self, where: tuple[str, str], ts: str) -> None:
        self._open[where] = ts
        self._open.move_to_end(where)
        if len(self._open) > REMEMBERED:
            self._open.popitem(last=False)

    # -- bot.channel.AnswerStream --------------------------------------------------------------

    def streams_to(self, target: DeliveryTarget) -> bool:
        """An assistant thread, with ``assistant.stream`` on."""
        return self._enabled and self._assistant.shows_status(target)

    async def append(self, target: DeliveryTarget, text: str) -> None:
        if not text:
            return
        await self._load()
        where = (target.conversation_id, target.thread_id or "")
        ts = self._open.get(where)
        parts = pieces(text)
        if ts is None:
            data = await self._api.call(
                "chat.startStream",
                lambda: self._api.client.chat_startStream(
                    channel=where[0], thread_ts=where[1], markdown_text=parts[0]
                ),
            )
            ts = str(data.get("ts") or "")
            if not ts:
                raise SlackCallFailed("chat.startStream", "no_ts")
            self._remember(where, ts)
            await self._record(where, ts)
            crash_point("mid_stream")
            parts = parts[1:]
        for part in parts:
            append = partial(
                self._api.client.chat_appendStream, channel=where[0], ts=ts, markdown_text=part
            )
            await self._api.call("chat.appendStream", append)

    async def _record(self, where: tuple[str, str], ts: str) -> None:
        if self._state is None:
            return
        try:
            await self._state.set(str(self._ref), _key(*where), ts)
        except StorageError as exc:
            # the stream goes on; a crash before its reply would leave it half-written
            log.warning("slack_stream_not_recorded", channel=str(self._ref), error=str(exc))

    # -- the reply (channels.slack.outbound) ---------------------------------------------------

    async def finish(
        self, target: DeliveryTarget, text: str, *, key: str, parts: int
    ) -> SentMessage | None:
        """Finish the message streamed to ``target`` as the first of the ``parts`` chunks
        of the reply ``key`` (its text ``text``, with its metadata); None when no stream is
        open there or it cannot be finished (the caller then posts the reply anew)."""
        if not (self._enabled and self._assistant.enabled):
            return None  # nothing was streamed: no store read for an ordinary reply
        try:
            await self._load()
        except StorageError as exc:
            log.warning("slack_streams_not_read", channel=str(self._ref), error=str(exc))
        where = (target.conversation_id, target.thread_id or "")
        ts = self._open.get(where)
        if ts is None:
            return None
        try:
            await self._stop(where, ts)
            await self._api.call(
                "chat.update",
                lambda: self._api.client.chat_update(
                    channel=where[0],
                    ts=ts,
                    text=text,
                    blocks=[],
                    metadata=reply_metadata(key, 1, parts),
                ),
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_stream_not_finished", channel=str(self._ref), error=str(exc))
            await self._forget(where)
            return None
        await self._forget(where)
        return SentMessage(target=target, message_id=ts)

    async def _stop(self, where: tuple[str, str], ts: str) -> None:
        try:
            await self._api.call(
                "chat.stopStream",
                lambda: self._api.client.chat_stopStream(channel=where[0], ts=ts),
            )
        except SlackCallFailed as exc:
            if exc.code != STREAM_OVER:  # stopped already (a first try, or Slack's timeout)
                raise

    async def _forget(self, where: tuple[str, str]) -> None:
        self._open.pop(where, None)
        if self._state is None:
            return
        try:
            await self._state.delete(str(self._ref), _key(*where))
        except StorageError as exc:
            log.info("slack_stream_row_kept", channel=str(self._ref), error=str(exc))
