"""Slack's inbound side: bolt listeners that only enqueue, and the worker that delivers.

Bolt acknowledges events before its listeners run, and the action listener acknowledges
first thing; the listeners here then only deduplicate and drop the payload into a bounded
queue, so nothing (a users.info lookup, a slow gateway) can delay an ack past Slack's
3 seconds. :meth:`SlackInbound.run` drains the queue in order until cancelled: messages
become envelopes for the host, answers on approval cards go to
:class:`~channels.slack.card_answers.ApprovalClicks`.

Three interactions are handled in their listener rather than queued, because they cannot
wait behind the gateway: "✏️ Reply instead" and "🔎 Show full and decide" open their modal
right after the ack (the ``trigger_id`` expires 3 seconds after the press; see
:mod:`channels.slack.card_answers`), and a modal submission is validated before its ack,
since the ack is what shows a field error (see :mod:`channels.slack.reply_instead`). The
submission itself is then queued like a click.

Slash commands (``/hatchway stop``) are acknowledged empty first thing, then queued; the
worker checks they are this app's in this workspace and delivers them as commands
(:mod:`channels.slack.commands`), keeping the response URL their answers are posted to
(:mod:`channels.slack.command_replies`).

Deduplication: by ``event_id`` (Slack's retries, ``X-Slack-Retry-Num``) and by
``channel:ts`` (the ``message``/``app_mention`` pair Slack sends for one mention). Both are
in-memory and bounded; the gateway's persisted inbox is the durable guarantee.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import structlog
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.backoff import cancel_requested
from bot.channel import ChannelHost
from bot.envelope import Capabilities, ChannelRef
from bot.errors import ChannelAuthError, ChannelError
from channels.common.card_index import CardIndex
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.buttons import ACTION_PATTERN, REPLY_ACTION_ID, SHOW_FULL_ACTION_ID
from channels.slack.card_answers import ApprovalClicks
from channels.slack.command_replies import CommandReplies
from channels.slack.commands import (
    SLASH_PREFIX,
    foreign_reason,
    parse_slash,
    slash_envelope,
    slash_message_id,
)
from channels.slack.config import SlackChannelConfig
from channels.slack.full_view import (
    FULL_VIEW_ACTION_PATTERN,
    FullViewClick,
    parse_full_view_click,
)
from channels.slack.normalise import (
    BotIdentity,
    build_envelope,
    ignore_reason,
    message_key,
    parse_message,
)
from channels.slack.reply_instead import (
    CALLBACK_ID,
    INPUT_BLOCK_ID,
    ReplySubmission,
    parse_submission,
    reply_error,
)

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
    """One acknowledged payload waiting for the worker."""

    kind: Literal["message", "click", "reaction", "command"]
    body: Mapping[str, Any]


class SlackInbound:
    """Acknowledged payloads → envelopes and approval clicks for the host."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: SlackChannelConfig,
        api: SlackWebApi,
        cards: CardIndex,
        command_replies: CommandReplies,
        app_id: str = "",
        queue_size: int = 1000,
    ) -> None:
        self._ref = ref
        self._config = config
        self._command_replies = command_replies
        self._app_id = app_id
        self._clicks = ApprovalClicks(ref=ref, api=api, cards=cards)
        self._names = DisplayNames(api, ttl_s=config.user_cache_ttl_s)
        self._queue: asyncio.Queue[_Inbound | ReplySubmission | FullViewClick] = asyncio.Queue(
            maxsize=queue_size
        )
        self._events = RecentKeys()
        self._messages = RecentKeys()
        # set by run(): the modal listeners ask it before opening a modal
        self._host: ChannelHost | None = None

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self._on_message)
        app.event("app_mention")(self._on_message)
        app.event("reaction_added")(self._on_reaction)
        app.action(ACTION_PATTERN)(self._on_action)
        app.action(REPLY_ACTION_ID)(self._on_reply_action)
        app.view_submission(CALLBACK_ID)(self._on_reply_submitted)
        app.action(SHOW_FULL_ACTION_ID)(self._on_show_full)
        app.action(FULL_VIEW_ACTION_PATTERN)(self._on_full_view_action)
        app.command(self._config.slash_command)(self._on_slash_command)

    # -- listeners: run after (or as) the ack; they must stay fast ---------------------------

    def _enqueue(self, item: _Inbound | ReplySubmission | FullViewClick) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            kind = item.kind if isinstance(item, _Inbound) else type(item).__name__
            log.warning("slack_inbound_dropped", channel=str(self._ref), kind=kind)

    def _is_retry(self, body: Mapping[str, Any]) -> bool:
        event_id = str(body.get("event_id") or "")
        if event_id and self._events.seen(event_id):
            log.info("slack_duplicate_event", channel=str(self._ref), event_id=event_id)
            return True
        return False

    async def _on_message(self, body: dict[str, Any]) -> None:
        event = body.get("event")
        if not isinstance(event, dict) or self._is_retry(body):
            return
        key = message_key(str(event.get("channel") or ""), str(event.get("ts") or ""))
        if self._messages.seen(key):
            log.info("slack_duplicate_message", channel=str(self._ref), message_id=key)
            return
        self._enqueue(_Inbound(kind="message", body=body))

    async def _on_reaction(self, body: dict[str, Any]) -> None:
        event = body.get("event")
        if not self._config.reactions_for_approval or not isinstance(event, dict):
            return
        if not self._is_retry(body):
            self._enqueue(_Inbound(kind="reaction", body=event))

    async def _on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        self._enqueue(_Inbound(kind="click", body=body))

    async def _on_reply_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._clicks.reply_requested(self._host, body)

    async def _on_reply_submitted(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Refuse an empty reply in the modal (the ack carries the error); otherwise close
        the modal and queue the reply for the host."""
        submission = parse_submission(body)
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

    async def _on_show_full(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        await self._clicks.full_view_requested(self._host, body)

    async def _on_full_view_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = parse_full_view_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        self._enqueue(click)

    async def _on_slash_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        trigger_id = str(body.get("trigger_id") or "")
        if trigger_id and self._messages.seen(SLASH_PREFIX + trigger_id):
            log.info("slack_duplicate_command", channel=str(self._ref))
            return
        self._enqueue(_Inbound(kind="command", body=body))

    # -- the worker --------------------------------------------------------------------------

    async def run(self, host: ChannelHost, bot: BotIdentity) -> None:
        """Deliver queued payloads in order until cancelled. A failed Slack call is logged
        and the next payload handled; a refused token ends the run."""
        self._host = host
        while True:
            item = await self._queue.get()
            try:
                if isinstance(item, ReplySubmission):
                    await self._clicks.reply(host, item)
                elif isinstance(item, FullViewClick):
                    await self._clicks.full_view_answer(host, item)
                elif item.kind == "message":
                    await self._deliver(host, bot, item.body)
                elif item.kind == "command":
                    await self._deliver_command(host, bot, item.body)
                elif item.kind == "click":
                    await self._clicks.click(host, item.body)
                else:
                    await self._clicks.reaction(host, bot, item.body)
            except ChannelAuthError:
                raise
            except ChannelError as exc:
                if cancel_requested():
                    raise asyncio.CancelledError from exc  # the stop, not a failed call
                log.warning("slack_inbound_failed", channel=str(self._ref), error=str(exc))

    def capabilities(self) -> Capabilities:
        config = self._config
        return Capabilities(
            can_edit=True,
            can_react=True,
            inline_buttons=True,
            typing=False,
            max_message_chars=config.max_message_chars,
            approval_backchannel=bool(config.approvers or config.approver_roles),
            command_prefix=f"{config.slash_command} ",
        )

    async def _deliver(self, host: ChannelHost, bot: BotIdentity, body: Mapping[str, Any]) -> None:
        callback = parse_message(body)
        if callback is None:
            log.info("slack_event_malformed", channel=str(self._ref))
            return
        reason = ignore_reason(callback.event, bot)
        if reason is not None:
            log.debug("slack_message_ignored", channel=str(self._ref), reason=reason)
            return
        user = callback.event.user
        envelope = build_envelope(
            callback,
            ref=self._ref,
            bot=bot,
            display_name=await self._names.get(user) if user else "",
            capabilities=self.capabilities(),
            dm_replies_in_thread=self._config.dm_replies_in_thread,
        )
        await host.deliver(envelope)

    async def _deliver_command(
        self, host: ChannelHost, bot: BotIdentity, body: Mapping[str, Any]
    ) -> None:
        command = parse_slash(body)
        if command is None:
            log.info("slack_command_malformed", channel=str(self._ref))
            return
        reason = foreign_reason(
            command,
            expected_command=self._config.slash_command,
            team_id=bot.team_id,
            app_id=self._app_id,
        )
        if reason is not None:
            log.warning(
                "slack_command_refused",
                channel=str(self._ref),
                reason=reason,
                team_id=command.team_id,
                user_id=command.user_id,
            )
            return
        message_id = slash_message_id(command.user_id, command.trigger_id)
        self._command_replies.remember(message_id, command.response_url)
        envelope = slash_envelope(
            command,
            ref=self._ref,
            display_name=await self._names.get(command.user_id),
            capabilities=self.capabilities(),
        )
        await host.deliver(envelope)
