"""Admission step: every chat command obeys the abuse limits, decided here.

The step sits right after the access policy and before every command's handler (``/stop``,
``/new``, ``/forget`` and any added later). It reads the command's
:class:`~bot.chat_commands.CommandLimit` in :data:`bot.chat_commands.CHAT_COMMANDS` and
decides for all of them, so a handler has no check of its own (the commands open to anyone
are answered before the access policy, and ask :meth:`CommandLimits.admits_open` there):

- ``messages`` (the default; ``/new``, ``/forget``): a token from the sender's and the
  conversation's rate-limit buckets, the ones messages take from
  (:meth:`bot.gateway.ratelimit.RateLimits.admits`). A refused command does nothing and never
  reaches its handler; its sender is told when to try again at most once a minute, as for a
  message. With ``[rate_limits]`` off, as messages, commands are not counted.
- ``always`` (``/stop``): always passes, for stopping must always work. Its answers ("Nothing
  is running.", what it stopped) are counted by an allowance of their own per sender,
  :data:`STOP_ANSWERS_BURST` refilled at :data:`STOP_ANSWERS_PER_MINUTE`, whatever
  ``[rate_limits]`` says; past it the command is done without an answer (``Arrival.quiet``).
- ``open`` (``/id``, ``/help``): answered before the access policy, to strangers too
  (:class:`bot.gateway.commands.OpenCommands`): one answer per sender every
  :data:`OPEN_ANSWER_INTERVAL_S`, whoever asks, and from a member
  (:meth:`bot.gateway.access.AccessPolicy.is_member`) a token of the buckets as well, as
  for ``messages``; a stranger has no bucket, and takes none from the conversation's. A
  command open to anyone that no step before the access policy answered is decided here
  the same way.

A message whose first word is no chat command passes on to the messages' path (the inbox
dedupe, then the same buckets). Slack and Discord adapters acknowledge a command before they
hand it over, so a refused one is acknowledged in time as well.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog

from bot.chat_commands import CHAT_COMMANDS, CommandLimit, command_of, command_spec
from bot.config.limits import RateLimit
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.buckets import Bucket, refilled

log = structlog.get_logger(__name__)

TakeToken = Callable[[IngressEnvelope], Awaitable[bool]]
"""Takes a token for a command from its sender's and conversation's buckets, telling them
when a refusal's notice is due; whether it found one (the rate limits' step,
:meth:`bot.gateway.ratelimit.RateLimits.admits`, for a message with no inbox entry)."""

MemberCheck = Callable[[IngressEnvelope], Awaitable[bool]]
"""Whether an envelope's sender is one the alias lets talk, asked without any effect
(:meth:`bot.gateway.access.AccessPolicy.is_member`)."""

#: A sender gets at most one answer to ``/id`` or ``/help`` this often (they are answered to
#: strangers, so they must not become a way to make the bot talk without end).
OPEN_ANSWER_INTERVAL_S = 5.0
#: A sender's answers to ``/stop``: this many at once, refilled at this many a minute.
STOP_ANSWERS_BURST = 10
STOP_ANSWERS_PER_MINUTE = 10.0
#: Senders whose allowance is held at most (beyond, those full again are forgotten first).
ALLOWANCES_HELD = 10_000


class AnswerAllowance:
    """A token bucket per sender, in memory: how many answers one is given. Bounded: at most
    :data:`ALLOWANCES_HELD` senders are held, those whose bucket is full again forgotten
    first."""

    def __init__(self, limit: RateLimit, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._clock = clock
        self._buckets: dict[str, Bucket] = {}

    def take(self, key: str) -> bool:
        """One answer for ``key``; False when its allowance is spent."""
        now = self._clock()
        tokens = refilled(self._buckets.get(key), self._limit, now)
        if tokens < 1.0:
            return False
        if key not in self._buckets and len(self._buckets) >= ALLOWANCES_HELD:
            self._forget_some(now)
        self._buckets[key] = Bucket(tokens=tokens - 1.0, at=now)
        return True

    def _forget_some(self, now: float) -> None:
        capacity = self._limit.capacity
        self._buckets = {
            k: b for k, b in self._buckets.items() if refilled(b, self._limit, now) < capacity
        }
        while len(self._buckets) >= ALLOWANCES_HELD:  # all still counting: the oldest go
            del self._buckets[next(iter(self._buckets))]


class CommandLimits:
    """The admission step (see the module docstring)."""

    #: what this step acts on; any other message passes it by (admission.compose)
    commands = frozenset(spec.name for spec in CHAT_COMMANDS)

    def __init__(
        self,
        *,
        take_token: TakeToken,
        is_member: MemberCheck,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._take_token = take_token
        self._is_member = is_member
        self._clock = clock
        self._stop_answers = AnswerAllowance(
            RateLimit(messages_per_minute=STOP_ANSWERS_PER_MINUTE, burst=STOP_ANSWERS_BURST),
            clock=clock,
        )
        self._last_open_answer: dict[str, float] = {}

    async def admits_open(self, envelope: IngressEnvelope) -> bool:
        """Whether a command open to anyone (``/id``, ``/help``) is answered: one answer per
        sender every :data:`OPEN_ANSWER_INTERVAL_S`, and a member's takes a token of the
        buckets too (a refusal's notice is sent by them, when due)."""
        name = command_of(envelope.text)
        if self._too_soon(f"{envelope.channel}:{envelope.sender.id}"):
            log.info("command_rate_limited", command=name, user_id=envelope.sender.id)
            return False
        if await self._is_member(envelope) and not await self._take_token(envelope):
            log.info("command_rate_limited", command=name, user_id=envelope.sender.id)
            return False
        return True

    def _too_soon(self, key: str) -> bool:
        now = self._clock()
        last = self._last_open_answer.get(key)
        if last is not None and now - last < OPEN_ANSWER_INTERVAL_S:
            return True
        if len(self._last_open_answer) >= ALLOWANCES_HELD:  # bound what strangers make us hold
            cutoff = now - OPEN_ANSWER_INTERVAL_S
            self._last_open_answer = {k: t for k, t in self._last_open_answer.items() if t > cutoff}
        self._last_open_answer[key] = now
        return False

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        envelope = arrival.envelope
        name = command_of(envelope.text)
        spec = command_spec(name) if name else None
        if spec is None:
            await call_next(arrival)  # a message
            return
        if spec.limit is CommandLimit.OPEN:  # answered here only if not before the policy
            if await self.admits_open(envelope):
                await call_next(arrival)
            return
        if spec.limit is CommandLimit.ALWAYS:
            key = f"{envelope.channel}:{envelope.sender.id}"
            if self._stop_answers.take(key):
                await call_next(arrival)
                return
            log.info("command_answer_withheld", command=name, user_id=envelope.sender.id)
            await call_next(replace(arrival, quiet=True))
            return
        if await self._take_token(envelope):
            await call_next(arrival)
            return
        log.info("command_rate_limited", command=name, user_id=envelope.sender.id)
