"""The ``getUpdates`` client outlives a cancelled request that cost its pool the only slot.

A real ``telegram.Bot`` against the loopback Bot API fake: a ``getUpdates`` is started and
cancelled after ``steps`` turns of the event loop, for every ``steps`` up to :data:`STEPS`
(each on a new pool, as the poll loop's first call after a start or a regained role is).
With httpcore 1.0.9 some of those cancellations leave the pool's one connection slot taken
for good (encode/httpcore#1093: the connection was assigned, not yet established): the next
``getUpdates`` fails with a pool timeout, and so would every later one. On a loaded machine
this happened to a replica whose poller role was taken and given back, and the messages sent
after it were never fetched (``test_replica_kill.py``, the Telegram poller under load).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable

import httpx
from structlog.testing import capture_logs
from telegram import Bot
from telegram.error import TimedOut
from telegram.request import BaseRequest, HTTPXRequest

from channels.telegram.poll_request import RenewingRequest
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import TOKEN

STEPS = 40
"""Event-loop turns swept between the start of a ``getUpdates`` and its cancellation."""


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context for every client here, as the adapter shares one: each client would
    otherwise load the CA bundle anew (tens of ms of CPU; the sweeps build 160 clients)."""
    return httpx.create_ssl_context()


def pool() -> HTTPXRequest:
    """The poll loop's pool (one connection), with a short pool timeout to keep this quick."""
    return HTTPXRequest(connection_pool_size=1, pool_timeout=0.2, httpx_kwargs={"verify": tls()})


async def cancelled_then_next(
    tg: FakeTelegram, request: Callable[[], BaseRequest]
) -> list[tuple[int, int]]:
    """For each ``steps``: cancel a ``getUpdates`` after ``steps`` loop turns, then count
    the calls it takes until one succeeds (4: none of three did): ``(steps, calls)`` of
    every sweep where the first call after the cancellation failed."""
    failed: list[tuple[int, int]] = []
    for steps in range(STEPS):
        calls_request = HTTPXRequest(httpx_kwargs={"verify": tls()})
        bot = Bot(TOKEN, base_url=tg.base_url, request=calls_request, get_updates_request=request())
        async with bot:
            poll = asyncio.create_task(bot.get_updates(timeout=0))
            for _ in range(steps):
                await asyncio.sleep(0)
            poll.cancel()
            await asyncio.gather(poll, return_exceptions=True)
            for calls in range(1, 4):  # noqa: B007 (read after the loop)
                try:
                    await bot.get_updates(timeout=0)
                    break
                except TimedOut:
                    pass
            else:
                calls = 4  # none of the three got through
            if calls > 1:
                failed.append((steps, calls))
    return failed


async def test_the_plain_pool_loses_its_slot_to_a_cancellation() -> None:
    """The defect the renewing client works around, reproduced by the sweep below: when
    this fails, httpcore no longer loses the slot and RenewingRequest may go."""
    async with FakeTelegram(TOKEN) as tg:
        failed = await cancelled_then_next(tg, pool)
    assert failed, "no cancellation lost the pool's slot"
    assert all(calls == 4 for _, calls in failed)  # stuck: no call succeeds any more


async def test_the_poll_client_renews_a_pool_a_cancellation_left_full() -> None:
    async with FakeTelegram(TOKEN) as tg:
        with capture_logs() as logs:
            failed = await cancelled_then_next(tg, lambda: RenewingRequest(pool))
    renewed = [e for e in logs if e["event"] == "telegram_poll_pool_renewed"]
    assert failed, "no cancellation lost the pool's slot: the sweep tested nothing"
    # One call fails (the pool timeout that renews the pool), the next one gets through.
    assert all(calls == 2 for _, calls in failed), failed
    assert len(renewed) == len(failed)
