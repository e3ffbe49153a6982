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
to try again at most once per :data:`NOTICE_WINDOW_S`, never once per refused message.
Scheduled runs (``envelope.background``) pass untouched, and so do the channel's approvers
when ``exempt_approvers`` is set.

The buckets live here, in memory: a decision costs no database trip, which keeps
admission's cost where ``bench/throughput.py`` measured it. They are written behind
(:class:`~bot.store.rate_limits.RateLimitBuckets`) every :data:`FLUSH_INTERVAL_S` and when
the gateway drains, and read back by the first admission after a start, so a restart keeps
them; a crash loses at most the last interval of counting. A bucket that is full again (and
whose notice window is over) says nothing, and is dropped from memory and the table alike,
so both hold only the senders and conversations active in the last minutes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import structlog

from bot.config import ChannelCommon
from bot.config.limits import RateLimit, RateLimitsConfig
from bot.envelope import IngressEnvelope
from bot.errors import StorageError
from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import Replies
from bot.store import InboxKey, Store
from bot.store.rate_limits import SavedBucket

log = structlog.get_logger(__name__)

#: How often the buckets that changed are written to the database.
FLUSH_INTERVAL_S = 1.0
#: A sender (or conversation) is told to slow down at most once in this long.
NOTICE_WINDOW_S = 60.0
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


@dataclass(slots=True)
class _Bucket:
    tokens: float  # counted at ``at`` (wall clock: the count outlives the process)
    at: float
    noticed_at: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Refusal:
    kind: LimitKind
    bucket: str
    wait_s: float  # until the bucket holds a token again


def _refilled(bucket: _Bucket | None, limit: RateLimit, now: float) -> float:
    if bucket is None:
        return limit.capacity
    elapsed = max(0.0, now - bucket.at)  # a clock set back refills nothing
    return min(limit.capacity, bucket.tokens + elapsed * limit.per_second)


class RateLimits:
    """The admission step, and the buckets it keeps (see the module docstring)."""

    def __init__(
        self,
        *,
        config: RateLimitsConfig,
        store: Store,
        replies: Replies,
        channel_settings: ChannelSettings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._store = store
        self._replies = replies
        self._channel_settings = channel_settings
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._dirty: set[str] = set()
        self._dropped: set[str] = set()
        self._saved: set[str] = set()  # buckets the table holds a row of
        self._loaded = False
        self._load_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()
        self.refused = 0
        """Messages refused since the start (the inbox keeps each one)."""

    def update(self, config: RateLimitsConfig) -> None:
        """Swap in reloaded limits (SIGHUP); the buckets keep their counts."""
        self._config = config

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        envelope = arrival.envelope
        if not self._config.active or envelope.background or self._exempt(envelope):
            await call_next(arrival)
            return
        await self._load()
        refusal = self._take(envelope, self._clock())
        if refusal is None:
            await call_next(arrival)
            return
        await self._refuse(envelope, refusal)

    def _exempt(self, envelope: IngressEnvelope) -> bool:
        if not self._config.exempt_approvers:
            return False
        cfg = self._channel_settings(envelope)
        return cfg is not None and envelope.sender.id in cfg.approvers

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
            tokens = _refilled(self._buckets.get(name), limit, now)
            if tokens < 1.0:
                return _Refusal(kind=kind, bucket=name, wait_s=(1.0 - tokens) / limit.per_second)
            counted.append((name, tokens))
        for name, tokens in counted:
            held = self._buckets.get(name)
            if held is None:
                self._buckets[name] = _Bucket(tokens=tokens - 1.0, at=now)
            else:
                held.tokens, held.at = tokens - 1.0, now
            self._dirty.add(name)
            self._dropped.discard(name)
        return None

    async def _refuse(self, envelope: IngressEnvelope, refusal: _Refusal) -> None:
        now = self._clock()
        self.refused += 1
        bucket = self._buckets[refusal.bucket]  # empty, so taken from before
        notice = now - bucket.noticed_at >= NOTICE_WINDOW_S
        if notice:
            bucket.noticed_at = now
            self._dirty.add(refusal.bucket)
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
        key = InboxKey(channel=str(envelope.channel), message_id=envelope.message_id)
        await self._store.inbox.skip(key, RATE_LIMITED)
        if notice:
            text = USER_NOTICE if refusal.kind == "user" else CONVERSATION_NOTICE
            await self._replies.send(envelope, text.format(seconds=seconds))

    # -- the buckets in the database ------------------------------------------------------

    async def _load(self) -> None:
        """Read the saved buckets once, before the first decision (a bucket this process
        already counted in wins)."""
        if self._loaded:
            return
        async with self._load_lock:
            if self._loaded:
                return
            for saved in await self._store.rate_limits.load():
                self._saved.add(saved.bucket)
                self._buckets.setdefault(
                    saved.bucket,
                    _Bucket(tokens=saved.tokens, at=saved.updated_at, noticed_at=saved.noticed_at),
                )
            self._loaded = True
            log.debug("rate_limit_buckets_loaded", buckets=len(self._buckets))

    async def flush(self) -> None:
        """Write the buckets that changed, and delete those that say nothing any more (full
        again, their notice window over, or their limit turned off)."""
        async with self._flush_lock:
            self._sweep(self._clock())
            if not self._dirty and not self._dropped:
                return
            dirty, dropped = self._dirty, self._dropped
            self._dirty, self._dropped = set(), set()
            changed = [
                SavedBucket(bucket=name, tokens=b.tokens, updated_at=b.at, noticed_at=b.noticed_at)
                for name in dirty
                if (b := self._buckets.get(name)) is not None
            ]
            try:
                await self._store.rate_limits.save(changed, sorted(dropped))
                self._saved = (self._saved - dropped) | {b.bucket for b in changed}
            except StorageError as exc:
                # counted again at the next flush; admission goes on from memory meanwhile
                self._dirty |= {name for name in dirty if name in self._buckets}
                self._dropped |= dropped - self._dirty
                log.warning("rate_limit_flush_failed", error=str(exc))

    def _sweep(self, now: float) -> None:
        for name, bucket in list(self._buckets.items()):
            limit = self._limit_of(name)
            idle = limit is None or _refilled(bucket, limit, now) >= limit.capacity
            if idle and now - bucket.noticed_at >= NOTICE_WINDOW_S:
                # full again: it says nothing, in memory or in the table (a bucket filled
                # before it was ever written costs no write at all)
                del self._buckets[name]
                self._dirty.discard(name)
                if name in self._saved:
                    self._dropped.add(name)

    def _limit_of(self, name: str) -> RateLimit | None:
        """The limit a bucket counts for; None when that limit is off now."""
        limit = self._config.per_user if name.startswith("user:") else self._config.per_conversation
        return limit if limit.active else None

    async def run(self) -> None:
        """Write the buckets behind every :data:`FLUSH_INTERVAL_S`; lives until cancelled."""
        while True:
            await asyncio.sleep(FLUSH_INTERVAL_S)
            await self.flush()
