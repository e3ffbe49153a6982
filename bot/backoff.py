"""Jittered exponential backoff: the one policy every retry loop in hatchway waits by.

The wait before retry ``n`` (counted from 0) is drawn uniformly from the upper half of
``min(max_s, initial_s * 2**n)``: it doubles up to its cap, never drops below half of it, and
loops that failed together (every channel when the network went away) drift apart.

:class:`BackoffPolicy` is the formula, a frozen value built from configuration (the
``reconnect_initial_s`` / ``reconnect_max_s`` keys, :class:`bot.config_model.Reconnecting`);
:class:`Backoff` is one loop's count of consecutive failures under it. Users: provider retries
(:mod:`bot.providers.retry`), adapter restarts (:mod:`bot.app`), MCP reconnects
(:mod:`bot.mcp.connection`), and in ``channels/`` the Telegram, Slack and Discord reconnects
and Telegram's server-error retries. A server's own hint (``Retry-After``) is honoured by the
caller instead of the policy.

**A stop is never a failure.** A retry loop catches failures and tries again; but libraries
(the ``mcp`` SDK, anyio, HTTP clients) can turn the cancellation of a stopping daemon into an
ordinary error (a closed stream, a network error), which the loop would take for a failure,
and the cancellation itself is then gone: the loop would retry for ever. ``Task.cancelling()``
still counts the request, so :func:`cancel_requested` tells a loop's ``except`` that it is
stopping, and :func:`sleep_before_retry`, the pause every retry loop takes, raises
``CancelledError`` instead of sleeping.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass

_MAX_DOUBLINGS = 64  # 2**64 times any sensible initial delay is past every cap


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffPolicy:
    """How long to wait before each retry: ``initial_s`` doubling up to ``max_s``, jittered
    into the upper half."""

    initial_s: float = 1.0
    max_s: float = 60.0

    def delay(self, retry: int, *, jitter: float) -> float:
        """The wait before retry ``retry`` (from 0); ``jitter`` is in [0, 1]."""
        ceiling = min(self.max_s, self.initial_s * 2.0 ** min(max(retry, 0), _MAX_DOUBLINGS))
        return ceiling / 2 * (1.0 + jitter)


class Backoff:
    """The waits of one retry loop: :meth:`next_delay` after each failure (each one longer, up
    to the cap), :meth:`reset` once the loop is healthy again. Not shared between loops.

    ``jitter`` is injectable so tests can fix the draw.
    """

    def __init__(
        self, policy: BackoffPolicy, *, jitter: Callable[[], float] = random.random
    ) -> None:
        self.policy = policy
        self._jitter = jitter
        self._retries = 0

    def next_delay(self) -> float:
        """The wait before the next retry; counts one more failure."""
        delay = self.policy.delay(self._retries, jitter=self._jitter())
        self._retries += 1
        return delay

    def reset(self) -> None:
        """Start over from ``initial_s`` (after a success)."""
        self._retries = 0


def cancel_requested() -> bool:
    """Whether the calling task has been asked to stop (``Task.cancelling()``), even if the
    ``CancelledError`` was caught on the way and something else raised in its place. Inside
    an ``asyncio.timeout`` block that has expired this is true too, until the block ends."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def sleep_before_retry(delay_s: float) -> None:
    """The pause of a retry loop after a failure: ``asyncio.sleep(delay_s)``, or
    ``CancelledError`` at once when the task has been asked to stop (the failure was most
    likely the stop itself, turned into an error by a library)."""
    if cancel_requested():
        raise asyncio.CancelledError
    await asyncio.sleep(delay_s)
