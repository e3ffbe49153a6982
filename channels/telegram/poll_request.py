"""The HTTP client of the ``getUpdates`` loop, which renews its connection pool when the pool
reports itself full.

httpcore 1.0.9 (under httpx, which python-telegram-bot uses) can lose a pool slot for good
when a request is cancelled after the pool gave it a new connection and before that
connection was established (encode/httpcore#1093): every later request then fails with
``PoolTimeout`` against a healthy server. The poll loop's request is cancelled whenever the
poller role is lost or the channel stops, and its pool holds one connection (one
``getUpdates`` at a time), so one unlucky cancellation left a replica unable to poll until
it was restarted; on a busy machine it happened within minutes.

:class:`RenewingRequest` wraps the library's ``HTTPXRequest``: a ``getUpdates`` that fails
with a pool timeout still fails (the poll loop pauses and asks again, as after any network
error), and the pool behind it is replaced by a new one first. With one caller at a time a
full pool can only be a lost slot, never contention, so nothing in flight is cut off. Only
the poll loop uses it: the Bot API pool is shared by concurrent sends, where a pool timeout
may be honest contention.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import structlog
from telegram.error import TimedOut
from telegram.request import BaseRequest, HTTPXRequest, RequestData

log = structlog.get_logger(__name__)


class RenewingRequest(BaseRequest):
    """A ``BaseRequest`` that delegates to an ``HTTPXRequest`` built by ``make`` and builds
    a new one when a request fails with a pool timeout (module docstring)."""

    def __init__(self, make: Callable[[], HTTPXRequest]) -> None:
        self._make = make
        self._inner = make()

    @property
    def read_timeout(self) -> float | None:
        return self._inner.read_timeout

    async def initialize(self) -> None:
        await self._inner.initialize()

    async def shutdown(self) -> None:
        await self._inner.shutdown()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: Any = BaseRequest.DEFAULT_NONE,
        write_timeout: Any = BaseRequest.DEFAULT_NONE,
        connect_timeout: Any = BaseRequest.DEFAULT_NONE,
        pool_timeout: Any = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        try:
            return await self._inner.do_request(
                url,
                method,
                request_data,
                read_timeout=read_timeout,
                write_timeout=write_timeout,
                connect_timeout=connect_timeout,
                pool_timeout=pool_timeout,
            )
        except TimedOut as exc:
            if isinstance(exc.__cause__, httpx.PoolTimeout):
                await self._renew()
            raise

    async def _renew(self) -> None:
        old, self._inner = self._inner, self._make()
        await self._inner.initialize()
        await old.shutdown()
        log.warning("telegram_poll_pool_renewed", reason="connection pool full")
