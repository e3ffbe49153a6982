"""Slack's inbound side: bolt listeners that store or queue, and the worker that hands over.

The app runs with ``process_before_response=True``: bolt runs a listener to its end and only
then sends the acknowledgement (an event listener is acknowledged for it; the others call
``ack`` themselves, and the ack goes out when they return), over Socket Mode and HTTP alike.
What a listener does happens before the ack, so each does as little as it can:

- **Message events** (``message``, ``app_mention``: new messages, edits, deletions) are
  written to the store first (:mod:`channels.slack.journal`), then queued. The worker hands
  each to the host (:mod:`channels.slack.handover`) and deletes its row once the host has it
  (``deliver`` returns once the message is in the inbox). :meth:`SlackInbound.run` first hands
  over the rows a crash left behind. So an acknowledged message event is always in the
  journal or in the gateway's inbox, and the ack waits for one write: one trip to the store's
  thread. The bot's own messages and channel housekeeping are acknowledged unstored. The
  assistant surface's events (``assistant_thread_started``,
  ``assistant_thread_context_changed``) take the same path to :mod:`channels.slack.assistant`.
- **Clicks, reactions, modal submissions and slash commands** are acknowledged first thing and
  queued in memory only: they act on live state (an open approval, a running turn), and one
  lost in a crash shows its sender no outcome, so it is made again.
- "✏️ Reply instead" and "🔎 Show full and decide" are acknowledged, then open their modal in a
  task of their own beside the worker, since the ``trigger_id`` expires 3 seconds after the
  press and cannot wait behind the gateway (:mod:`channels.slack.card_surface`). A reply
  form's submission is validated before its ack, since the ack is what shows a field error
  (:func:`channels.slack.cards.reply_error`), then queued like a click.

Deduplication: by ``event_id`` (Slack's retries) and by ``channel:ts`` (the
``message``/``app_mention`` pair Slack sends for one mention), in memory and bounded
(:class:`~channels.slack.journal.Arrivals`); a copy that arrives while the first is being
stored is acknowledged once it is stored. The gateway's persisted inbox is the durable
guarantee. A message event that finds the queue full stays in the journal and is read back
once the queue has drained; other payloads are then dropped and logged.

At a stop the worker is cancelled, possibly half-way through handing an event over; once the
socket is closed (nothing more comes in), :meth:`SlackInbound.hand_over_rest` hands the
events still in hand to the host: the one cut off, then those queued. Left in the journal
they would wait for some later start, and be answered after newer messages of their
conversation that reached other replicas meanwhile. Where the host refuses them (one process
draining, or the database gone) they stay in the journal for the next start, as before.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import structlog
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.backoff import Backoff, cancel_requested, sleep_before_retry
from bot.channel import ChannelHost
from bot.crashpoints import crash_point
from bot.envelope import ChannelRef
from bot.errors import ChannelAuthError, ChannelError, HatchwayError, StorageError
from channels.common.card_index import CardIndex
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.assistant import EVENT_TYPES, SlackAssistant
from channels.slack.card_surface import (
    Press,
    ReplySubmission,
    SlackCardAnswers,
    read_press,
    read_submission,
)
from channels.slack.cards import ACTION_PATTERN, INPUT_BLOCK_ID, REPLY_CALLBACK_ID, reply_error
from channels.slack.command_replies import CommandReplies
from channels.slack.commands import SLASH_PREFIX
from channels.slack.config import SlackChannelConfig
from channels.slack.handover import Handover
from channels.slack.journal import Arrivals, EventJournal, journal_key
from channels.slack.message_events import Ignored, classify
from channels.slack.normalise import BotIdentity, message_key

log = structlog.get_logger(__name__)


class RecentKeys:
    """A bounded memory of keys already seen (the oldest is forgotten first)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._keys: OrderedDict[str, None] = OrderedDict()

    def seen(self, key: str) -> bool:
        """True if ``key`` was seen before; records it either way."""
        if key in self._keys:
            self._keys.move_to_end(key)
            return True
        self._keys[key] = None
        if len(self._keys) > self._size:
            self._keys.popitem(last=False)
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class _Inbound:
    """One acknowledged payload waiting for the worker; ``journal_key`` names the stored row
    of a message event."""

    kind: Literal["message", "reaction", "command"]
    body: Mapping[str, Any]
    journal_key: str = ""


_Item = _Inbound | Press | ReplySubmission


class SlackInbound:
    """Acknowledged payloads → envelopes and approval clicks for the host."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        api: SlackWebApi,
        names: DisplayNames,
        cards: CardIndex,
        command_replies: CommandReplies,
        journal: EventJournal | None = None,
        app_id: str = "",
        assistant: SlackAssistant | None = None,
        queue_size: int = 1000,
    ) -> None:
        self._ref = ref
        self._config = config
        self._journal = journal or EventJournal(None, str(ref))
        self._handover = Handover(
            ref=ref,
            config=config,
            api=api,
            names=names,
            command_replies=command_replies,
            app_id=app_id,
        )
        self._clicks = SlackCardAnswers(ref=ref, api=api, cards=cards, names=names)
        self._assistant = assistant
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(maxsize=queue_size)
        self._arrivals = Arrivals()
        self._reactions = RecentKeys()
        self._commands = RecentKeys()
        self._queued: set[str] = set()  # journal keys of queued message events
        self._backlog = False  # a stored message event found the queue full
        self._current: _Item | None = None  # the payload being handled
        # set by run(): the listeners ask them
        self._host: ChannelHost | None = None
        self._bot: BotIdentity | None = None
        self._aside: asyncio.TaskGroup | None = None

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_message)
        for event_type in sorted(EVENT_TYPES):
            app.event(event_type)(self._on_assistant_event)
        app.event("reaction_added")(self._on_reaction)
        app.action(ACTION_PATTERN)(self._on_action)
        app.view_submission(REPLY_CALLBACK_ID)(self._on_reply_submitted)
        app.command(self._config.slash_command)(self._on_slash_command)

    # -- listeners: they run before the ack, and must stay fast ---------------------------------

    def _enqueue(self, item: _Item) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            kind = item.kind if isinstance(item, _Inbound) else type(item).__name__
            log.warning("slack_inbound_dropped", channel=str(self._ref), kind=kind)

    async def _on_message(self, body: dict[str, Any]) -> None:
        event = body.get("event")
        if not isinstance(event, dict):
            return
        if self._bot is not None:
            kind = classify(body, self._bot)
            if isinstance(kind, Ignored):
                log.debug("slack_message_ignored", channel=str(self._ref), reason=kind.reason)
                return
        channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
        keys = (str(body.get("event_id") or ""), message_key(channel, ts) if channel else "")
        await self._take(keys, body)

    async def _on_assistant_event(self, body: dict[str, Any]) -> None:
        """An assistant thread started or its context changed: stored and queued like a
        message event, by its ``event_id``."""
        if self._assistant is None or not self._assistant.enabled:
            return
        await self._take((str(body.get("event_id") or ""),), body)

    async def _take(self, keys: tuple[str, ...], body: dict[str, Any]) -> None:
        """Store an event callback first, then queue it for the worker (module docstring)."""
        key = journal_key(body)
        if not await self._store_first(keys, key, body):
            return
        try:
            self._queue.put_nowait(_Inbound(kind="message", body=body, journal_key=key))
        except asyncio.QueueFull:
            log.warning("slack_inbound_deferred", channel=str(self._ref), key=key)
            self._backlog = True  # stored: read back once the queue has drained
        else:
            self._queued.add(key)

    async def _store_first(self, keys: tuple[str, ...], key: str, body: dict[str, Any]) -> bool:
        """Store the event unless a copy of it came first: True when this copy was stored
        (and is to be queued), False for a copy of one already stored. Raises when it cannot
        be stored: bolt then sends no ack, and Slack sends the event again."""
        while (earlier := self._arrivals.claim(keys)) is not None:
            if await asyncio.shield(earlier):
                log.info("slack_duplicate_event", channel=str(self._ref), event_id=keys[0])
                return False
        try:
            await self._journal.record(key, body)
        except BaseException:
            self._arrivals.settle(keys, stored=False)
            raise
        crash_point("after_persist")
        self._arrivals.settle(keys, stored=True)
        return True

    async def _on_reaction(self, body: dict[str, Any]) -> None:
        event = body.get("event")
        if not self._config.reactions_for_approval or not isinstance(event, dict):
            return
        event_id = str(body.get("event_id") or "")
        if event_id and self._reactions.seen(event_id):
            log.info("slack_duplicate_event", channel=str(self._ref), event_id=event_id)
            return
        self._enqueue(_Inbound(kind="reaction", body=event))

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A press of a card's button or the full view's: one that opens a modal is answered
        beside the worker, at once; the others are queued."""
        await ack()
        press = read_press(body)
        if press is None:
            log.info("slack_click_malformed", channel=str(self._ref))
        elif press.opens_modal:
            self._beside(self._clicks.press(self._host, press))
        else:
            self._enqueue(press)

    async def _on_reply_submitted(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Refuse an empty reply in the modal (the ack carries the error); otherwise close
        the modal and queue the reply for the host."""
        submission = read_submission(body)
        if submission is None:
            await ack()
            log.info("slack_reply_malformed", channel=str(self._ref))
            return
        error = reply_error(submission.text)
        if error is not None:
            await ack(response_action="errors", errors={INPUT_BLOCK_ID: error})
            return
        await ack()
        self._enqueue(submission)

    async def _on_slash_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        trigger_id = str(body.get("trigger_id") or "")
        if trigger_id and self._commands.seen(SLASH_PREFIX + trigger_id):
            log.info("slack_duplicate_command", channel=str(self._ref))
            return
        self._enqueue(_Inbound(kind="command", body=body))

    def _beside(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (opening a modal) in a task beside the worker, so the listener
        returns and the ack goes out at once."""
        if self._aside is None:
            work.close()
            log.info("slack_inbound_not_running", channel=str(self._ref))
            return
        self._aside.create_task(self._guarded(work))

    async def _guarded(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except HatchwayError as exc:
            log.warning("slack_modal_failed", channel=str(self._ref), error=str(exc))

    # -- the worker --------------------------------------------------------------------------

    async def run(self, host: ChannelHost, bot: BotIdentity, aside: asyncio.TaskGroup) -> None:
        """Hand over the message events a crash left stored, then queued payloads in order,
        until cancelled. ``aside`` runs the modal openings. A failed Slack call is logged and
        the next payload handled; a refused token ends the run.

        A message event the host refuses (this process drains for a stop, or lost its
        database) stays in the journal and is handed over again after a pause (the channel's
        reconnect backoff), before what was queued after it. The channel keeps running
        meanwhile: ending it would close the socket and the HTTP session that the turns still
        running send their replies through."""
        self._host, self._bot, self._aside = host, bot, aside
        backoff = Backoff(self._config.reconnect_backoff())
        try:
            while True:
                try:
                    await self._work(host, bot, backoff)
                except StorageError as exc:
                    log.info("slack_event_refused", channel=str(self._ref), error=str(exc))
                    await sleep_before_retry(backoff.next_delay())
        finally:
            self._aside = None

    async def _work(self, host: ChannelHost, bot: BotIdentity, backoff: Backoff) -> None:
        """:meth:`run`'s loop, from the stored events on; raises the host's refusal."""
        await self._read_back(host, bot)
        backoff.reset()
        while True:
            item = await self._queue.get()
            if isinstance(item, _Inbound):
                self._queued.discard(item.journal_key)  # read back if its handling fails
            self._current = item
            await self._handle(host, bot, item)
            if self._backlog and self._queue.empty():
                self._backlog = False
                await self._read_back(host, bot)

    async def _read_back(self, host: ChannelHost, bot: BotIdentity) -> None:
        """Hand over the stored message events that are not queued (a crash's, or those that
        found the queue full), oldest first."""
        for key, body in await self._journal.left_over():
            if key not in self._queued:
                log.info("slack_event_read_back", channel=str(self._ref), key=key)
                self._current = _Inbound(kind="message", body=body, journal_key=key)
                await self._handle(host, bot, self._current)

    async def hand_over_rest(self, host: ChannelHost, bot: BotIdentity) -> None:
        """The stop, once nothing more comes in: hand the host the message events in hand
        (the one cut off, then those queued, in order; module docstring). Clicks and
        commands in the queue are dropped: they act on live state and are made again. The
        first refusal by the host ends it: the rest stays in the journal."""
        items = [] if self._current is None else [self._current]
        self._current = None
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        events = [i for i in items if isinstance(i, _Inbound) and i.kind == "message"]
        for handed, item in enumerate(events):
            self._queued.discard(item.journal_key)
            try:
                await self._handle(host, bot, item)
            except StorageError as exc:
                log.info(
                    "slack_events_left_in_journal",
                    channel=str(self._ref),
                    events=len(events) - handed,
                    reason=str(exc),
                )
                return
        if events:
            log.info("slack_events_handed_over_at_stop", channel=str(self._ref), events=len(events))

    async def _message(self, host: ChannelHost, bot: BotIdentity, body: Mapping[str, Any]) -> None:
        assistant = self._assistant
        if assistant is not None and assistant.handles(body):
            await assistant.event(body)
            return
        await self._handover.message(host, bot, body)
        if assistant is not None:
            await assistant.after_message(body)

    async def _handle(self, host: ChannelHost, bot: BotIdentity, item: _Item) -> None:
        try:
            if isinstance(item, ReplySubmission):
                await self._clicks.reply(host, item)
            elif isinstance(item, Press):
                await self._clicks.press(host, item)
            elif item.kind == "message":
                await self._message(host, bot, item.body)
            elif item.kind == "command":
                await self._handover.command(host, bot, item.body)
            else:
                await self._clicks.reaction(host, bot, item.body)
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            if cancel_requested():
                raise asyncio.CancelledError from exc  # the stop, not a failed call
            log.warning("slack_inbound_failed", channel=str(self._ref), error=str(exc))
        self._current = None  # the host has it: a stop now does not hand it over again
        if isinstance(item, _Inbound) and item.journal_key:
            await self._journal.done(item.journal_key)
