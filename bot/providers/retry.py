"""Retries of one provider call: jittered exponential backoff honouring ``Retry-After``.

A concrete provider runs each HTTP exchange as one *attempt*; an attempt that fails raises
:class:`AttemptFailed`, which says whether the failure is transient and how long the server
asked us to wait. :class:`Retrier` runs attempts until one succeeds, a failure is permanent, or
``max_retries`` retries are spent, then raises a plain :class:`~bot.errors.ProviderError`
(:class:`~bot.errors.ProviderTimeout` when the last attempt timed out) whose message is short
and safe to show a user: no keys, no response bodies.

A streamed attempt that dies half-way is retried from the start; nothing partial is returned,
and :class:`~bot.providers.draft_stream.DraftStream` keeps the user's draft coherent.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import structlog

from bot.errors import ProviderError, ProviderTimeout
from bot.providers.base import StreamSink
from bot.providers.draft_stream import DraftStream

if TYPE_CHECKING:
    # Imported with the vendor SDK, after READY (:mod:`bot.providers.deferred`), not with
    # this module, which the daemon loads before it.
    import httpx2

log = structlog.get_logger(__name__)

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]
"""How the retrier waits between attempts; ``asyncio.sleep`` outside tests."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry.

    The n-th retry (n from 0) waits ``min(max_delay_s, base_delay_s * 2**n)``, jittered into
    its upper half, unless the server sent ``Retry-After``: then exactly that long, capped at
    ``retry_after_cap_s``.
    """

    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    retry_after_cap_s: float = 30.0

    def backoff(self, retry_index: int, *, jitter: float) -> float:
        """The wait before retry ``retry_index`` when the server gave no hint;
        ``jitter`` is in [0, 1)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0**retry_index)
        return ceiling / 2 + ceiling / 2 * jitter


class AttemptFailed(ProviderError):
    """One attempt failed. Raised by providers inside :meth:`Retrier.run`, never beyond it.

    ``message`` is already user-safe; ``retry_after_s`` is the server's hint, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after_s: float | None = None,
        timed_out: bool = False,
        status: int | None = None,
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.retry_after_s = retry_after_s
        self.timed_out = timed_out
        self.status = status


def parse_retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP
    date (relative to ``now``, a Unix time). ``None`` when absent or unreadable."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - now)


def classify_status(status: int, *, provider: str, retry_after_s: float | None) -> AttemptFailed:
    """Turn an HTTP error status into an :class:`AttemptFailed` with a user-safe message."""
    if status == 429:
        reason = "is rate limiting us"
    elif status in (401, 403):
        reason = "rejected the API key"
    elif status == 404:
        reason = "does not know this model or endpoint"
    elif status in (400, 413, 422):
        reason = "rejected the request"
    elif status >= 500:
        reason = "had a server error"
    else:
        reason = "returned an error"
    return AttemptFailed(
        f"{provider} {reason} (HTTP {status})",
        retryable=status in RETRYABLE_STATUS,
        retry_after_s=retry_after_s,
        status=status,
    )


def timeout_failure(provider: str, timeout_s: float) -> AttemptFailed:
    return AttemptFailed(
        f"{provider} did not answer within {timeout_s:g}s", retryable=True, timed_out=True
    )


def connection_failure(provider: str) -> AttemptFailed:
    return AttemptFailed(f"cannot reach {provider} (connection failed or was cut)", retryable=True)


def transport_failure(
    exc: httpx2.TransportError, *, provider: str, timeout_s: float
) -> AttemptFailed:
    """A raw transport error that escaped the SDK (e.g. a stream cut while being read)."""
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return timeout_failure(provider, timeout_s)
    return connection_failure(provider)


class Retrier:
    """Runs the attempts of one provider. Stateless between calls; safe to share.

    ``sleep``, ``jitter`` and ``clock`` are injectable so tests can record the waits instead
    of spending them.
    """

    def __init__(
        self,
        *,
        provider: str,
        policy: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.provider = provider
        self.policy = policy
        self._sleep = sleep
        self._jitter = jitter
        self.clock = clock

    async def run(
        self,
        attempt: Callable[[StreamSink | None], Awaitable[T]],
        stream: StreamSink | None,
    ) -> T:
        """Call ``attempt`` until it returns; its argument is the sink for that attempt.

        Raises :class:`ProviderError` / :class:`ProviderTimeout` when giving up.
        ``CancelledError`` propagates at once.
        """
        draft = DraftStream(stream) if stream is not None else None
        retries = 0
        while True:
            try:
                return await attempt(draft.attempt() if draft is not None else None)
            except AttemptFailed as exc:
                failure = exc
            except json.JSONDecodeError:
                # A 200 whose body (or an SSE data line) is not JSON: garbled in transit or by
                # a proxy. Every SDK lets this escape; it is retried like a cut stream.
                failure = AttemptFailed(
                    f"{self.provider} sent a reply that is not valid JSON", retryable=True
                )
            if not failure.retryable or retries >= self.policy.max_retries:
                log.warning(
                    "provider_gave_up",
                    provider=self.provider,
                    attempts=retries + 1,
                    status=failure.status,
                    reason=str(failure),
                )
                error_type = ProviderTimeout if failure.timed_out else ProviderError
                raise error_type(str(failure), retryable=failure.retryable) from None
            delay = self._delay(failure, retries)
            log.warning(
                "provider_retry",
                provider=self.provider,
                attempt=retries + 1,
                status=failure.status,
                delay_s=round(delay, 3),
                reason=str(failure),
            )
            retries += 1
            await self._sleep(delay)

    def _delay(self, failure: AttemptFailed, retry_index: int) -> float:
        if failure.retry_after_s is not None:
            return min(failure.retry_after_s, self.policy.retry_after_cap_s)
        return self.policy.backoff(retry_index, jitter=self._jitter())
