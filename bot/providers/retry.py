"""Retries of one provider call: jittered exponential backoff honouring ``Retry-After``.

A concrete provider runs each HTTP exchange as one *attempt*; an attempt that fails raises
:class:`AttemptFailed`, which says whether the failure is transient and how long the server
asked us to wait. :class:`Retrier` runs attempts until one succeeds, a failure is permanent, or
``max_retries`` retries are spent, then raises a plain :class:`~bot.errors.ProviderError`
(:class:`~bot.errors.ProviderTimeout` when the last attempt timed out) whose message is short
and safe to show a user: no keys, no response bodies. The wait between attempts is
:class:`bot.backoff.BackoffPolicy`'s, unless the server named one.

An attempt may also let its vendor SDK's errors escape: the ``anthropic`` SDK (and the
``openai`` one, generated from the same template) raises one tree (:class:`SdkErrors`), which
:meth:`Retrier.run` maps to :class:`AttemptFailed` (timeout, connection, HTTP status,
unreadable reply, error inside a stream), as it does raw transport errors and a body that is
not JSON. Only an HTTP status is read by the provider itself (``status``). A provider on a
client of its own (:mod:`bot.providers.chat_client`) maps its transport's errors with the
same functions (:func:`timeout_failure`, :func:`connection_lost`,
:meth:`Retrier.status_failure`, …), so the messages and the ladder are the same.

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
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from bot import telemetry
from bot.backoff import BackoffPolicy
from bot.errors import ProviderError, ProviderTimeout
from bot.providers.base import StreamSink
from bot.providers.draft_stream import DraftStream
from bot.providers.endpoint import shown_url
from bot.scrub import scrub_text

log = structlog.get_logger(__name__)

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]
"""How the retrier waits between attempts; ``asyncio.sleep`` outside tests."""

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})


#: Provider retries: short, since a user waits on them.
PROVIDER_BACKOFF = BackoffPolicy(initial_s=0.5, max_s=8.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry: up to ``max_retries`` retries, each after
    ``backoff``'s delay unless the server sent ``Retry-After``: then exactly that long,
    capped at ``retry_after_cap_s``."""

    max_retries: int = 3
    backoff: BackoffPolicy = field(default=PROVIDER_BACKOFF)
    retry_after_cap_s: float = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SdkErrors:
    """A vendor SDK's error classes: ``api`` is the root (an ``api`` error of no other kind
    is an error event inside a stream), ``timeout`` and ``connection`` mean no answer,
    ``status`` an HTTP error status, ``unreadable`` a reply the SDK's types do not fit."""

    api: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]
    status: type[Exception]
    unreadable: type[Exception]


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


def connection_failure(provider: str, exc: BaseException) -> AttemptFailed:
    """No answer because of the connection, read from an SDK's or httpx's error: see
    :func:`connection_lost`."""
    return connection_lost(provider, _request_url(exc), never_connected=_never_connected(exc))


def connection_lost(provider: str, url: str, *, never_connected: bool) -> AttemptFailed:
    """No answer because of the connection: none could be made (the one line a user needs:
    where, whether the server runs, what to run), or it was cut mid-reply. ``url`` is the
    one the request went to, without credentials or query (:func:`shown_url`), or ``""``."""
    where = f"{provider} at {url}" if url else provider
    if never_connected:
        return AttemptFailed(
            f"cannot reach {where}: is the server running? Run `hatchway doctor` to check",
            retryable=True,
        )
    return AttemptFailed(f"lost the connection to {where} mid-reply", retryable=True)


def not_json_failure(provider: str) -> AttemptFailed:
    """A 200 whose body (or an SSE data line) is not JSON: garbled in transit or by a proxy.
    Retried like a cut stream."""
    return AttemptFailed(f"{provider} sent a reply that is not valid JSON", retryable=True)


def unreadable_failure(provider: str) -> AttemptFailed:
    """JSON that is not the shape of a reply (not retried: the same server sends it again)."""
    return AttemptFailed(f"{provider} sent a reply we cannot read", retryable=False)


def stream_error_failure(provider: str, error_type: str) -> AttemptFailed:
    """An error event inside a stream that had begun."""
    log.warning("provider_stream_error", provider=provider, error_type=error_type)
    return AttemptFailed(f"{provider} reported an error mid-reply", retryable=True)


def _request_url(exc: BaseException) -> str:
    """The URL of the request that failed, as shown to people ("" when unknown). Both SDKs'
    connection errors and httpx's transport errors carry the request; httpx raises
    ``RuntimeError`` when asked for one it was not given."""
    for error in _chain(exc):
        try:
            request = getattr(error, "request", None)
        except RuntimeError:
            continue
        url = getattr(request, "url", None)
        if url is not None:
            return shown_url(str(url))
    return ""


def _never_connected(exc: BaseException) -> bool:
    """Whether no connection was made at all (refused, no route, unknown host)."""
    import httpx2

    return any(isinstance(error, httpx2.ConnectError) for error in _chain(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the errors it was raised from (an SDK error wraps the transport's)."""
    seen: list[BaseException] = []
    error: BaseException | None = exc
    while error is not None and error not in seen:
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def transport_failure(exc: Exception, *, provider: str, timeout_s: float) -> AttemptFailed:
    """A raw transport error (an ``httpx2.TransportError``) that escaped the SDK (e.g. a
    stream cut while being read)."""
    import httpx2

    if isinstance(exc, httpx2.TimeoutException):
        return timeout_failure(provider, timeout_s)
    return connection_failure(provider, exc)


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
        *,
        sdk: SdkErrors | None = None,
        status: Callable[[Any], AttemptFailed] | None = None,
        timeout_s: float,
    ) -> T:
        """Call ``attempt`` until it returns; its argument is the sink for that attempt.

        ``sdk`` names the errors the attempt's SDK raises (none for an attempt that raises only
        :class:`AttemptFailed` and ``json.JSONDecodeError``); ``status`` turns one of its
        ``sdk.status`` errors into a failure (usually with :meth:`status_failure`);
        ``timeout_s`` is the attempt's timeout, for messages. Raises :class:`ProviderError` /
        :class:`ProviderTimeout` when giving up. ``CancelledError`` propagates at once.
        """
        sdk_errors: tuple[type[Exception], ...] = ()
        transport_errors: tuple[type[Exception], ...] = ()
        if sdk is not None:
            # Imported with the vendor SDK (after READY: :mod:`bot.providers.deferred`), not
            # with this module, which the daemon loads before it: loaded by now.
            import httpx2

            sdk_errors, transport_errors = (sdk.api,), (httpx2.TransportError,)
        draft = DraftStream(stream) if stream is not None else None
        retries = 0
        while True:
            try:
                return await attempt(draft.attempt() if draft is not None else None)
            except AttemptFailed as exc:
                failure = exc
            except json.JSONDecodeError:
                # Every SDK lets this escape (see not_json_failure).
                failure = not_json_failure(self.provider)
            except sdk_errors as exc:
                assert sdk is not None
                failure = self._sdk_failure(exc, sdk, status, timeout_s)
            except transport_errors as exc:
                # a raw transport error that escaped the SDK (a stream cut while being read)
                failure = transport_failure(exc, provider=self.provider, timeout_s=timeout_s)
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
            telemetry.retried(self.provider, failure.status)
            await self._sleep(delay)

    def status_failure(
        self, status: int, headers: Mapping[str, str], *, detail: str, **fields: object
    ) -> AttemptFailed:
        """An HTTP error status as a failure, honouring the server's ``Retry-After``; logged
        as ``provider_http_error`` with ``detail`` (scrubbed, cut to 200 characters) and any
        further ``fields``."""
        log.warning(
            "provider_http_error",
            provider=self.provider,
            status=status,
            detail=scrub_text(detail)[:200],
            **fields,
        )
        lowered = {key.lower(): value for key, value in headers.items()}
        hint = parse_retry_after(lowered, now=self.clock())
        return classify_status(status, provider=self.provider, retry_after_s=hint)

    def _sdk_failure(
        self,
        exc: Exception,
        sdk: SdkErrors,
        status: Callable[[Any], AttemptFailed] | None,
        timeout_s: float,
    ) -> AttemptFailed:
        if isinstance(exc, sdk.timeout):
            return timeout_failure(self.provider, timeout_s)
        if isinstance(exc, sdk.connection):
            return connection_failure(self.provider, exc)
        if isinstance(exc, sdk.status):
            assert status is not None, "an SDK's status errors need the provider's reading"
            return status(exc)
        if isinstance(exc, sdk.unreadable):
            return unreadable_failure(self.provider)
        return stream_error_failure(self.provider, type(exc).__name__)

    def _delay(self, failure: AttemptFailed, retry_index: int) -> float:
        if failure.retry_after_s is not None:
            return min(failure.retry_after_s, self.policy.retry_after_cap_s)
        return self.policy.backoff.delay(retry_index, jitter=self._jitter())
