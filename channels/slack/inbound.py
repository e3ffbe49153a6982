"""Slack's inbound side: bolt listeners that only enqueue, and the worker that delivers.

Bolt acknowledges events before its listeners run, and the action listener acknowledges
first thing; the listeners here then only deduplicate and drop the payload into a bounded
queue, so nothing (a users.info lookup, a slow gateway) can delay an ack past Slack's
3 seconds. :meth:`SlackInbound.run` drains the queue in order until cancelled.

Three interactions are handled in their listener rather than queued, because they cannot
wait behind the gateway: "✏️ Reply instead" and "🔎 Show full and decide" open their modal
right after the ack (the ``trigger_id`` expires 3 seconds after the press), and a modal
submission is validated before its ack, since the ack is what shows a field error (see
:mod:`channels.slack.reply_instead`). The submission itself is then queued like a click. Before
opening a modal the host is asked whether the presser may decide the approval
(:meth:`~bot.channel.ChannelHost.approval_refusal`); a refused presser gets the ephemeral note
a refused click gets instead of the modal. The full view (:mod:`channels.slack.full_view`) is
built from the approval as its row is now (:meth:`~bot.channel.ChannelHost.approval_card`),
so a card from before a restart opens it too. Answers from a modal are still reported and
decided by the host, since the request may have changed while the modal was open.

A press of Approve / Always / Deny in the full view is reported with ``full_view=True`` and
the view is then replaced with the outcome (or the refusal). An Approve or Always from the
card itself (a stale button, a reaction) is reported with ``full_view=False``, so the service
refuses it for a cut request (``NEEDS_FULL_VIEW``); for a card the adapter itself could only
show in part (:func:`~channels.slack.cards.approvable_on_card`), the adapter refuses it.

Every click, reaction or reply is reported with the card it came from
(:attr:`~bot.channel.ApprovalClick.card`): when the request is no longer open, the approval
service edits that card to its outcome. The adapter never closes a card itself.

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

from bot.channel import (
    ApprovalCard,
    ApprovalChoice,
    ApprovalClick,
    CardState,
    ChannelHost,
    ClickVerdict,
    SentMessage,
)
from bot.config import SlackChannelConfig
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget
from bot.errors import ChannelAuthError, ChannelError
from channels.common.card_index import CardIndex
from channels.slack.api import DisplayNames, SlackWebApi
from channels.slack.cards import (
    ACTION_PATTERN,
    REPLY_ACTION_ID,
    SHOW_FULL_ACTION_ID,
    CardPlace,
    approvable_on_card,
    parse_click,
    parse_reaction,
    parse_reply_click,
    parse_show_full_click,
)
from channels.slack.full_view import (
    FULL_VIEW_ACTION_PATTERN,
    OUTCOMES,
    FullViewClick,
    full_view,
    outcome_view,
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
    reply_modal,
)

log = structlog.get_logger(__name__)

MODAL_FAILED = "The reply form could not be opened. Press ✏️ Reply instead again."
FULL_VIEW_FAILED = "The full request could not be opened. Press 🔎 Show full and decide again."


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

    kind: Literal["message", "click", "reaction"]
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
        queue_size: int = 1000,
    ) -> None:
        self._ref = ref
        self._config = config
        self._api = api
        self._cards = cards
        self._names = DisplayNames(api, ttl_s=config.user_cache_ttl_s)
        self._queue: asyncio.Queue[_Inbound | ReplySubmission | FullViewClick] = asyncio.Queue(
            maxsize=queue_size
        )
        self._events = RecentKeys()
        self._messages = RecentKeys()
        # set by run(): the reply listener asks it before opening a modal
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
        """Open the reply modal now, for a presser the host would let decide: the trigger
        expires before a queued item would run. Anyone else is told why not instead."""
        await ack()
        click = parse_reply_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        if self._host is not None:
            refused = await self._host.approval_refusal(
                channel=self._ref, approval_id=click.place.approval_id, user_id=click.user_id
            )
            if refused is not None:
                log.info("slack_reply_refused", channel=str(self._ref), verdict=refused.value)
                await self._tell(click.place, click.user_id, refused.message)
                return
        try:
            await self._api.open_view(trigger_id=click.trigger_id, view=reply_modal(click.place))
        except ChannelError as exc:
            log.warning("slack_reply_modal_failed", channel=str(self._ref), error=str(exc))
            await self._tell(click.place, click.user_id, MODAL_FAILED)

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
        """Open the full view now, for a presser the host would let decide, built from the
        approval as its row is now. Anyone else is told why not instead."""
        await ack()
        click = parse_show_full_click(body)
        host = self._host
        if click is None or host is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        place = click.place
        card = await self._full_view_card(host, place, click.user_id)
        if isinstance(card, ClickVerdict):
            log.info("slack_full_view_refused", channel=str(self._ref), verdict=card.value)
            await self._tell(place, click.user_id, card.message)
            return
        try:
            await self._api.open_view(trigger_id=click.trigger_id, view=full_view(card, place))
        except ChannelError as exc:
            log.warning("slack_full_view_failed", channel=str(self._ref), error=str(exc))
            await self._tell(place, click.user_id, FULL_VIEW_FAILED)

    async def _full_view_card(
        self, host: ChannelHost, place: CardPlace, user_id: str
    ) -> ApprovalCard | ClickVerdict:
        """The card to show whole, or why ``user_id`` gets no full view (the refusal a click
        would get; the request expired or was decided)."""
        refused = await host.approval_refusal(
            channel=self._ref, approval_id=place.approval_id, user_id=user_id
        )
        if refused is not None:
            return refused
        card = await host.approval_card(channel=self._ref, approval_id=place.approval_id)
        if card is None or card.state is CardState.EXPIRED:
            return ClickVerdict.UNKNOWN
        if card.state is not CardState.PENDING:
            return ClickVerdict.ALREADY_DECIDED
        return card

    async def _on_full_view_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = parse_full_view_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        self._enqueue(click)

    # -- the worker --------------------------------------------------------------------------

    async def run(self, host: ChannelHost, bot: BotIdentity) -> None:
        """Deliver queued payloads in order until cancelled. A failed Slack call is logged
        and the next payload handled; a refused token ends the run."""
        self._host = host
        while True:
            item = await self._queue.get()
            try:
                if isinstance(item, ReplySubmission):
                    await self._reply(host, item)
                elif isinstance(item, FullViewClick):
                    await self._full_view_answer(host, item)
                elif item.kind == "message":
                    await self._deliver(host, bot, item.body)
                elif item.kind == "click":
                    await self._click(host, item.body)
                else:
                    await self._reaction(host, bot, item.body)
            except ChannelAuthError:
                raise
            except ChannelError as exc:
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

    async def _answer(
        self,
        host: ChannelHost,
        place: CardPlace,
        *,
        choice: ApprovalChoice,
        user_id: str,
        replacement_text: str | None = None,
    ) -> None:
        """Report an answer from a card (or the reply modal); a refusal is told privately."""
        verdict = await self._decide(
            host, place, choice=choice, user_id=user_id, replacement_text=replacement_text
        )
        if verdict is not ClickVerdict.ACCEPTED:
            await self._tell(place, user_id, verdict.message)

    async def _shown_in_part(self, host: ChannelHost, place: CardPlace) -> bool:
        """Whether the card could only show part of a request the service did not cut (its
        summary did not fit one message): the service cannot know, so the adapter refuses
        Approve / Always from such a card itself."""
        card = await host.approval_card(channel=self._ref, approval_id=place.approval_id)
        if card is None or card.cut or card.state is not CardState.PENDING:
            return False  # unknown, decided or cut: the service answers
        return not approvable_on_card(card)

    async def _decide(
        self,
        host: ChannelHost,
        place: CardPlace,
        *,
        choice: ApprovalChoice,
        user_id: str,
        replacement_text: str | None = None,
        full_view: bool = False,
    ) -> ClickVerdict:
        approving = not full_view and choice is not ApprovalChoice.DENY
        if approving and await self._shown_in_part(host, place):
            refused = await host.approval_refusal(
                channel=self._ref, approval_id=place.approval_id, user_id=user_id
            )
            log.info("slack_approval_needs_full_view", channel=str(self._ref))
            return refused or ClickVerdict.NEEDS_FULL_VIEW
        card = None
        if place.message_ts:
            target = DeliveryTarget(
                channel=self._ref, conversation_id=place.channel_id, thread_id=place.thread_ts
            )
            card = SentMessage(target=target, message_id=place.message_ts)
        click = ApprovalClick(
            channel=self._ref,
            approval_id=place.approval_id,
            choice=choice,
            user_id=user_id,
            replacement_text=replacement_text,
            card=card,
            full_view=full_view,
        )
        verdict = await host.approval_clicked(click)
        log.info(
            "slack_approval_answer",
            channel=str(self._ref),
            verdict=verdict.value,
            full_view=full_view,
        )
        return verdict

    async def _full_view_answer(self, host: ChannelHost, click: FullViewClick) -> None:
        """Report a press in the full view, then show its outcome (or refusal) in the view.
        If the view cannot be updated (closed, or a second press already changed it), a
        refusal is told privately instead; an accepted answer shows on the card anyway."""
        verdict = await self._decide(
            host, click.place, choice=click.choice, user_id=click.user_id, full_view=True
        )
        accepted = verdict is ClickVerdict.ACCEPTED
        text = OUTCOMES[click.choice] if accepted else verdict.message
        try:
            await self._api.update_view(
                view_id=click.view_id,
                view=outcome_view(text, click.place),
                view_hash=click.view_hash,
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.info("slack_full_view_update_failed", channel=str(self._ref), error=str(exc))
            if not accepted:
                await self._tell(click.place, click.user_id, verdict.message)

    async def _tell(self, place: CardPlace, user_id: str, text: str) -> None:
        """An ephemeral note to ``user_id`` beside the card; a failure is only logged."""
        try:
            await self._api.post_ephemeral(
                channel=place.channel_id, user=user_id, text=text, thread_ts=place.thread_ts
            )
        except ChannelAuthError:
            raise
        except ChannelError as exc:
            log.warning("slack_ephemeral_failed", channel=str(self._ref), error=str(exc))

    async def _click(self, host: ChannelHost, body: Mapping[str, Any]) -> None:
        click = parse_click(body)
        if click is None:
            log.info("slack_click_malformed", channel=str(self._ref))
            return
        await self._answer(host, click.place, choice=click.choice, user_id=click.user_id)

    async def _reply(self, host: ChannelHost, reply: ReplySubmission) -> None:
        await self._answer(
            host,
            reply.place,
            choice=ApprovalChoice.DENY,
            user_id=reply.user_id,
            replacement_text=reply.text,
        )

    async def _reaction(
        self, host: ChannelHost, bot: BotIdentity, event: Mapping[str, Any]
    ) -> None:
        reaction = parse_reaction(event)
        if reaction is None or reaction.user_id == bot.user_id:
            return
        card = await self._cards.find(reaction.channel_id, reaction.message_ts)
        if card is None or not card.open:
            return
        place = CardPlace(
            approval_id=card.approval_id,
            channel_id=reaction.channel_id,
            message_ts=reaction.message_ts,
            thread_ts=card.thread_id,
        )
        await self._answer(host, place, choice=reaction.choice, user_id=reaction.user_id)
