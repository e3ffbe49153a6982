"""Telegram flood control and server errors: bounded retries.

Telegram answers ``429`` with ``parameters.retry_after`` (seconds); python-telegram-bot raises
:class:`telegram.error.RetryAfter`. :func:`with_retry_after` sleeps that long and tries again,
at most ``attempts`` times and never for longer than ``max_wait_s`` in one wait; past either
bound it raises :class:`bot.errors.ChannelError` so the caller sees an ordinary channel
failure instead of a stalled turn.
"""

from __future__ import annotations

import asyncio
import datetime as dtm
import random
import warnings
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from telegram.error import BadRequest, NetworkError, RetryAfter, TimedOut
from telegram.warnings import PTBDeprecationWarning

from bot.backoff import BackoffPolicy
from bot.errors import ChannelError

log = structlog.get_logger(__name__)

T = TypeVar("T")

#: Retries of a call the Bot API failed with a server error: short, as a turn waits on them.
SERVER_ERROR_BACKOFF = BackoffPolicy(initial_s=0.5, max_s=4.0)


def retry_after_seconds(exc: RetryAfter) -> float:
    """The wait Telegram asked for, in seconds (PTB 22 returns int or timedelta)."""
    with warnings.catch_warnings():
        # Reading the attribute as an int is deprecated in PTB 22.2+; either type is fine here.
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    if isinstance(value, dtm.timedelta):
        return value.total_seconds()
    return float(value)


async def with_retry_after(
    method: str,
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = 3,
    max_wait_s: float = 60.0,
) -> T:
    """Run ``call``; on ``RetryAfter`` wait as asked and run it again (bounded). A server
    error (5xx, reported by PTB as a plain ``NetworkError``) is retried the same number of
    times with a short jittered backoff; a rejected request (``BadRequest``) and a timeout
    (the message may have been delivered) are not."""
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except (BadRequest, TimedOut):
            raise
        except NetworkError as exc:
            if attempt == attempts:
                raise
            delay = SERVER_ERROR_BACKOFF.delay(attempt - 1, jitter=random.random())
            log.warning("telegram_server_error", method=method, error=exc.message, attempt=attempt)
            await asyncio.sleep(delay)
        except RetryAfter as exc:
            wait = retry_after_seconds(exc)
            if attempt == attempts or wait > max_wait_s:
                raise ChannelError(
                    f"telegram {method}: rate limited (retry after {wait:g} s) "
                    f"after {attempt} attempt(s)"
                ) from exc
            log.warning("telegram_rate_limited", method=method, retry_after_s=wait, attempt=attempt)
            await asyncio.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
