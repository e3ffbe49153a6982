"""Admission step: rate limits, a token bucket per sender and per conversation.

``[rate_limits]`` (:mod:`bot.config.limits`) sets two buckets a message must both find a
token in: its sender's (``user:<kind.alias>:<user id>``) and its conversation's
(``conversation:<kind.alias>:<conversation id>``, threads and senders together). A bucket
holds ``burst`` tokens and refills at ``messages_per_minute``; an admitted message takes one
from each, a refused one takes none.

The step comes after the inbox dedupe, for two reasons: a platform's redelivery of a message
already admitted is dropped there and never reaches a bucket, and a refused message already
has its inbox entry, which is marked ``failed`` ("rate limited") so that nothing vanishes
without a trace. Its sender, or for the conversation's limit the conversation, is told when
to try again at most once per :data:`~bot.gateway.buckets.NOTICE_WINDOW_S`, never once per
refused message.
Scheduled runs (``envelope.background``) pass untouched, and so do the channel's approvers
when ``exempt_approvers`` is set.

Chat commands take from the same buckets, earlier: they have no inbox entry, so
:mod:`bot.gateway.command_limits` asks :meth:`RateLimits.admits` before a command runs; a
refused command is counted and noticed alike, and left out of the inbox.

The buckets are counted in memory and shared through the database
(:mod:`bot.gateway.buckets`), so a decision costs no trip, several replicas share one
bucket, and a restart keeps them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import structlog

from bot.config import ChannelCommon
from bot.config.limits import RateLimit, RateLimitsConfig
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.buckets import BucketBook, refilled
from bot.gateway.sending import Replies
from bot.store import InboxKey, Store

log = structlog.get_logger(__name__)

#: The inbox error of a refused message.
RATE_LIMITED = "rate limited"
USER_NOTICE = (
    "You're sending messages faster than I can take them; I'll answer again in {seconds} s."
)
CONVERSATION_NOTICE = (
    "This conversation is sending messages faster than I can take them; I'll answer again "
    "in {seconds} s."
)

LimitKind = Literal["user", "conversation"]
ChannelSettings = Callable[[IngressEnvelope], ChannelCommon | None]


def user_bucket(channel: str, user_id: str) -> str:
    """The name of a sender's bucket on ``channel`` (``kind.alias``)."""
    return f"user:{channel}:{user_id}"


def conversation_bucket(channel: str, conversation_id: str) -> str:
    """The name of a conversation's bucket on ``channel`` (``kind.alias``)."""
    return f"conversation:{channel}:{conversation_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Refusal:
    kind: LimitKind
    bucket: str
    wait_s: float  # until the bucket holds a token again


class RateLimits:
    """The admission step, and the buckets it keeps (see the module docstring)."""

    def __init__(
        self,
        *,
        config: RateLimitsConfig,
        store: Store,
        shared: bool = False,
        replies: Replies,
        channel_settings: ChannelSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._store = store
        self._replies = replies
        self._channel_settings = channel_settings
        self._clock = clock
        self._book = BucketBook(
            store=store, config=lambda: self._config, shared=shared, clock=clock
        )
        self.refused = 0
        """Messages refused since the start (the inbox keeps each one)."""

    def update(self, config: RateLimitsConfig) -> None:
        """Swap in reloaded limits (SIGHUP); the buckets keep their counts."""
        self._config = config

    def __call__(self, arrival: Arrival, call_next: Admit) -> Awaitable[None]:
        if self._passes(arrival.envelope):  # no coroutine of this step's own
            return call_next(arrival)
        return self._limited(arrival, call_next)

    async def _limited(self, arrival: Arrival, call_next: Admit) -> None:
        if await self._takes(arrival.envelope, recorded=True):
            await call_next(arrival)

    async def admits(self, envelope: IngressEnvelope, *, recorded: bool) -> bool:
        """Take a token for ``envelope`` from each of its buckets; False when one is empty,
        and then the refusal is counted, logged and its notice sent when due. ``recorded``:
        the message has an inbox entry, which a refusal marks; a chat command has none
        (:mod:`bot.gateway.command_limits` asks with False)."""
        return self._passes(envelope) or await self._takes(envelope, recorded=recorded)

    def _passes(self, envelope: IngressEnvelope) -> bool:
        """No bucket applies: no limit set, a scheduled run, or an exempt approver."""
        return not self._config.active or envelope.background or self._exempt(envelope)

    async def _takes(self, envelope: IngressEnvelope, *, recorded: bool) -> bool:
        """:meth:`admits` for a message the limits apply to."""
        await self._book.load()
        refusal = self._take(envelope, self._clock())
        if refusal is None:
            return True
        await self._refuse(envelope, refusal, recorded=recorded)
        return False

    def _exempt(self, envelope: IngressEnvelope) -> bool:
        if not self._config.exempt_approvers:
            return False
        cfg = self._channel_settings(envelope)
        return cfg is not None and cfg.is_approver(envelope.sender)

    def _take(self, envelope: IngressEnvelope, now: float) -> _Refusal | None:
        """One token from each active bucket of the message, or none and the refusal."""
        channel = str(envelope.channel)
        limits: list[tuple[LimitKind, str, RateLimit]] = []
        if self._config.per_user.active:
            limits.append(("user", user_bucket(channel, envelope.sender.id), self._config.per_user))
        if self._config.per_conversation.active:
            bucket = conversation_bucket(channel, envelope.conversation_id)
            limits.append(("conversation", bucket, self._config.per_conversation))
        counted: list[tuple[str, float]] = []
        for kind, name, limit in limits:
            tokens = refilled(self._book.get(name), limit, now)
            if tokens < 1.0:
                return _Refusal(kind=kind, bucket=name, wait_s=(1.0 - tokens) / limit.per_second)
            counted.append((name, tokens))
        self._book.take(counted, now)
        return None

    async def _refuse(
        self, envelope: IngressEnvelope, refusal: _Refusal, *, recorded: bool
    ) -> None:
        now = self._clock()
        self.refused += 1
        notice = self._book.notice_due(refusal.bucket, now)
        seconds = max(1, math.ceil(refusal.wait_s))
        log.info(
            "envelope_rate_limited",
            limit=refusal.kind,
            user_id=envelope.sender.id,
            conversation_id=envelope.conversation_id,
            message_id=envelope.message_id,
            retry_in_s=seconds,
            noticed=notice,
        )
        if recorded:
            key = InboxKey(channel=str(envelope.channel), message_id=envelope.message_id)
            await self._store.inbox.skip(key, RATE_LIMITED)
        if notice:
            text = USER_NOTICE if refusal.kind == "user" else CONVERSATION_NOTICE
            await self._replies.send(envelope, text.format(seconds=seconds))

    async def flush(self) -> None:
        """Merge the buckets with the database now (:meth:`BucketBook.flush`)."""
        await self._book.flush()

    async def run(self) -> None:
        """Merge the buckets every second; lives until cancelled."""
        await self._book.run()
