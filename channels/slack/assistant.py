"""Slack's assistant surface: assistant threads, their status line, suggested prompts and title.

With ``[channels.slack.<alias>.assistant] enabled`` (off by default) the app is used as
Slack's AI assistant: a person opens a thread with it in the assistant pane (a thread of the
app's DM with them, ``D…``) and Slack sends ``assistant_thread_started``; picking another
channel while the pane is open sends ``assistant_thread_context_changed``. Both take the
message events' path (:mod:`channels.slack.inbound`: stored before the ack, handed over by
the worker) and end here:

- a started thread gets the suggested prompts of the channel's agent
  (``assistant.threads.setSuggestedPrompts``), and its context (the channel the person was
  viewing) is kept;
- the thread's first message titles it (``assistant.threads.setTitle``), once;
- a turn in the thread is told the channel the person is viewing (the ``viewing`` part of
  the channel, :class:`bot.channel.PlaceViewed`): its id, its workspace and its name
  (``conversations.info``, cached: :mod:`channels.slack.channel_names`), which the model
  reads as data (:func:`bot.context.viewing_block`), never as instructions;
- while a turn works in it the progress sink shows a status line
  (``assistant.threads.setStatus``: "is thinking…", then "is running <tool>…"; only a tool's
  name, nothing of its arguments), through :class:`~bot.channel.WorkStatus`.

The context is kept in hatchway's own store (``assistant:<channel>:<thread_ts>`` rows of the
channel state, :class:`ThreadContexts`: the ids of the channel viewed and its workspace, and
whether the thread was titled; nothing a person wrote), for :data:`KEEP_S` after its last
change (pruned when the channel starts), never in message metadata: slack-bolt's default
context store writes it into the metadata of the bot's first reply in the thread, the metadata
start-up recovery finds the bot's replies by (:mod:`channels.slack.delivery_check`). bolt is
handed :class:`ThreadContexts` so that nothing of it can reach for that default.

Every call here is best effort: a refused status, title or prompt list (the workspace lacks
the AI-apps setting or ``assistant:write``: ``missing_scope``, ``not_in_assistant_thread``)
is logged once per thread and the thread is then left alone; the turn and its answer go on
as everywhere else.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from slack_bolt.context.assistant.thread_context import AssistantThreadContext
from slack_bolt.context.assistant.thread_context_store.async_store import (
    AsyncAssistantThreadContextStore,
)
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.channel import ViewedPlace
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope
from bot.errors import ChannelAuthError, ChannelError, StorageError
from bot.scrub import scrub_text
from bot.store.channel_state import ChannelState
from bot.visible_text import visible
from channels.slack.api import SlackCallFailed, SlackWebApi
from channels.slack.channel_names import ChannelNames
from channels.slack.config import SlackChannelConfig

log = structlog.get_logger(__name__)

KEY_PREFIX = "assistant:"
#: How long a thread's row is kept after its last change (a thread idle longer is not titled
#: again, and its context is forgotten).
KEEP_S = 90 * 24 * 3600.0
#: The events of the assistant surface, handed to :meth:`SlackAssistant.event`.
EVENT_TYPES = frozenset({"assistant_thread_started", "assistant_thread_context_changed"})
#: How many threads whose status Slack refused are remembered (not asked again).
REMEMBERED = 1024
#: Slack's answers meaning "not here": the thread is then left alone.
NOT_HERE = frozenset(
    {
        "missing_scope",
        "not_in_assistant_thread",
        "channel_not_found",
        "invalid_thread_ts",
        "thread_not_found",
        "message_not_found",
        "access_denied",
        "feature_not_enabled",
    }
)
_STATUS_CHARS = 100


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Context(_Payload):
    channel_id: str = ""
    team_id: str = ""
    enterprise_id: str = ""


class _Thread(_Payload):
    user_id: str = ""
    channel_id: str = Field(min_length=1)
    thread_ts: str = Field(min_length=1)
    context: _Context = Field(default_factory=_Context)


class _Event(_Payload):
    type: str
    assistant_thread: _Thread


class _Message(_Payload):
    type: str
    channel: str = ""
    channel_type: str = ""
    thread_ts: str = ""
    subtype: str | None = None
    bot_id: str | None = None
    text: str = ""


def _key(channel_id: str, thread_ts: str) -> str:
    return f"{KEY_PREFIX}{channel_id}:{thread_ts}"


def thread_title(text: str, limit: int) -> str:
    """A thread's title from its first message: one line of its visible text, cut."""
    line = visible(" ".join(scrub_text(text).split()))
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


class ThreadContexts(AsyncAssistantThreadContextStore):
    """Assistant thread contexts in the store's channel state (module docstring); what bolt
    is given instead of its default store. Without a store (an adapter built outside the
    daemon) the last :data:`REMEMBERED` threads are kept in memory."""

    def __init__(self, state: ChannelState | None, channel: str) -> None:
        self._state = state
        self._channel = channel
        self._memory: OrderedDict[str, str] = OrderedDict()

    async def _row(self, channel_id: str, thread_ts: str) -> dict[str, Any] | None:
        key = _key(channel_id, thread_ts)
        if self._state is None:
            raw = self._memory.get(key)
        else:
            raw = await self._state.get(self._channel, key)
        try:
            row = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        return row if isinstance(row, dict) else None

    async def _write(self, channel_id: str, thread_ts: str, row: Mapping[str, Any]) -> None:
        key, value = _key(channel_id, thread_ts), json.dumps(dict(row), separators=(",", ":"))
        if self._state is not None:
            await self._state.set(self._channel, key, value)
            return
        self._memory[key] = value
        self._memory.move_to_end(key)
        if len(self._memory) > REMEMBERED:
            self._memory.popitem(last=False)

    async def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        row = await self._row(channel_id, thread_ts) or {"titled": False}
        row["context"] = {k: str(v) for k, v in context.items() if v}
        await self._write(channel_id, thread_ts, row)

    async def context_of(self, channel_id: str, thread_ts: str) -> dict[str, str]:
        """The thread's kept context (``channel_id``, ``team_id``, ``enterprise_id``, those
        Slack gave); empty when none was kept."""
        row = await self._row(channel_id, thread_ts)
        context = row.get("context") if row else None
        if not isinstance(context, dict):
            return {}
        return {str(k): v for k, v in context.items() if isinstance(v, str) and v}

    async def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        context = await self.context_of(channel_id, thread_ts)
        # a context naming no channel (Slack sends one when the pane opens outside a
        # channel) is none to bolt, whose context object needs the channel
        return AssistantThreadContext(context) if context.get("channel_id") else None

    async def prune(self) -> int:
        """Forget the threads idle for :data:`KEEP_S` (of every Slack alias); how many."""
        if self._state is None:
            return 0
        return await self._state.prune(KEY_PREFIX, older_than_s=KEEP_S)

    async def untitled(self, channel_id: str, thread_ts: str) -> bool:
        """Whether the thread started as an assistant thread and has no title yet."""
        row = await self._row(channel_id, thread_ts)
        return row is not None and not row.get("titled")

    async def titled(self, channel_id: str, thread_ts: str) -> None:
        row = await self._row(channel_id, thread_ts) or {}
        row["titled"] = True
        await self._write(channel_id, thread_ts, row)


class SlackAssistant:
    """The assistant surface of one Slack channel alias (module docstring)."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        api: SlackWebApi,
        state: ChannelState | None,
    ) -> None:
        self._ref = ref
        self._options = config.assistant
        self._agent = config.agent
        self._api = api
        self.contexts = ThreadContexts(state, str(ref))
        self._names = ChannelNames(api)
        self._refused: OrderedDict[tuple[str, str], None] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self._options.enabled

    async def start(self) -> None:
        """The channel starts: forget the threads idle for :data:`KEEP_S`. A store that
        cannot be written now is no reason not to start."""
        try:
            pruned = await self.contexts.prune()
        except StorageError as exc:
            log.info("slack_assistant_prune_failed", channel=str(self._ref), error=str(exc))
            return
        if pruned:
            log.info("slack_assistant_threads_pruned", channel=str(self._ref), rows=pruned)

    # -- events (the worker) ---------------------------------------------------------------

    @staticmethod
    def handles(body: Mapping[str, Any]) -> bool:
        """Whether ``body`` is an event callback of the assistant surface."""
        event = body.get("event")
        return isinstance(event, Mapping) and event.get("type") in EVENT_TYPES

    async def event(self, body: Mapping[str, Any]) -> None:
        """A thread started (keep its context, offer the prompts) or its context changed
        (keep the new one). A malformed event is logged and dropped."""
        try:
            event = _Event.model_validate(body.get("event"))
        except ValidationError:
            log.info("slack_assistant_event_malformed", channel=str(self._ref))
            return
        if not self.enabled:
            log.debug("slack_assistant_off", channel=str(self._ref), event=event.type)
            return
        thread = event.assistant_thread
        context = thread.context.model_dump(exclude_defaults=True)
        try:
            await self.contexts.save(
                channel_id=thread.channel_id, thread_ts=thread.thread_ts, context=context
            )
        except StorageError as exc:
            log.warning("slack_assistant_context_not_kept", channel=str(self._ref), error=str(exc))
        if event.type == "assistant_thread_started":
            await self._offer_prompts(thread)

    async def _offer_prompts(self, thread: _Thread) -> None:
        prompts = self._options.prompts.get(self._agent) or []
        if not prompts:
            return
        params: dict[str, Any] = {
            "channel_id": thread.channel_id,
            "thread_ts": thread.thread_ts,
            "prompts": [p.model_dump() for p in prompts],
        }
        if self._options.prompts_title:
            params["title"] = self._options.prompts_title
        await self._best_effort(
            "assistant.threads.setSuggestedPrompts",
            (thread.channel_id, thread.thread_ts),
            lambda: self._api.client.assistant_threads_setSuggestedPrompts(**params),
        )

    async def after_message(self, body: Mapping[str, Any]) -> None:
        """Title an assistant thread with its first message, once (the worker calls this
        after the message was handed over)."""
        if not self.enabled or self._options.title_chars == 0:
            return
        try:
            message = _Message.model_validate(body.get("event"))
        except ValidationError:
            return
        if (
            message.type != "message"
            or message.channel_type != "im"
            or not message.thread_ts
            or message.subtype is not None
            or message.bot_id
        ):
            return
        title = thread_title(message.text, self._options.title_chars)
        where = (message.channel, message.thread_ts)
        if not title or where in self._refused:
            return
        try:
            if not await self.contexts.untitled(*where):
                return
        except StorageError:
            return
        done = await self._best_effort(
            "assistant.threads.setTitle",
            where,
            lambda: self._api.client.assistant_threads_setTitle(
                channel_id=where[0], thread_ts=where[1], title=title
            ),
        )
        if done:
            try:
                await self.contexts.titled(*where)
            except StorageError as exc:
                log.info("slack_assistant_title_not_kept", channel=str(self._ref), error=str(exc))

    # -- the channel viewed (bot.channel.PlaceViewed) --------------------------------------

    async def viewed_place(self, envelope: IngressEnvelope) -> ViewedPlace | None:
        """The channel the person was viewing when they last opened or moved the assistant
        thread ``envelope`` is in; None outside an assistant thread (no database trip there)
        or when Slack named no channel. A name that cannot be read leaves only the id."""
        if not self.enabled or not envelope.is_direct or not envelope.thread_id:
            return None
        try:
            context = await self.contexts.context_of(envelope.conversation_id, envelope.thread_id)
        except StorageError as exc:
            log.info("slack_assistant_context_unread", channel=str(self._ref), error=str(exc))
            return None
        viewed = context.get("channel_id", "")
        if not viewed:
            return None
        return ViewedPlace(
            conversation_id=viewed,
            name=visible(await self._names.get(viewed)),
            workspace_id=context.get("team_id", ""),
        )

    # -- the status line (bot.channel.WorkStatus) -------------------------------------------

    def shows_status(self, target: DeliveryTarget) -> bool:
        """An assistant thread: a thread of a DM with the app, while the surface is on and
        Slack has not refused a status there."""
        return (
            self.enabled
            and target.conversation_id.startswith("D")
            and bool(target.thread_id)
            and (target.conversation_id, target.thread_id or "") not in self._refused
        )

    async def show_status(self, target: DeliveryTarget, *, tool: str | None) -> None:
        if not self.shows_status(target):
            return
        status = self._options.status if tool is None else f"is running {tool}…"
        status = thread_title(status, _STATUS_CHARS)  # one scrubbed line, never arguments
        where = (target.conversation_id, target.thread_id or "")
        await self._best_effort(
            "assistant.threads.setStatus",
            where,
            lambda: self._api.client.assistant_threads_setStatus(
                channel_id=where[0], thread_ts=where[1], status=status
            ),
        )

    async def _best_effort(
        self,
        method: str,
        where: tuple[str, str],
        invoke: Callable[[], Awaitable[AsyncSlackResponse]],
    ) -> bool:
        """Make one call; whether it was carried out. A refusal is logged, and where Slack
        says the thread has no assistant surface (:data:`NOT_HERE`) the thread is left alone
        from then on; a refused token still ends the channel's run."""
        try:
            await self._api.call(method, invoke)
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            if isinstance(exc, SlackCallFailed) and exc.code in NOT_HERE:
                self._refused[where] = None
                if len(self._refused) > REMEMBERED:
                    self._refused.popitem(last=False)
            log.info(
                "slack_assistant_call_refused",
                channel=str(self._ref),
                method=method,
                error=str(exc),
            )
            return False
        return True
