"""Rate limits across replicas: Apps over one real PostgreSQL database, each with its own
connection to the platform (the in-process channel). One sender's bucket is shared: what one
replica took, the other counts from once they merged (as they do every second; the test
asks for it instead of waiting), and the sender is told once for both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.gateway.ratelimit import RATE_LIMITED
from bot.store import InboxKey, InboxStatus, Store
from tests.fakes.replica_apps import SLACK, Replica, Replicas, message

WAIT_S = 60.0
#: Three messages at once, then one per ten minutes: nothing refills while the test runs.
LIMITS = {"rate_limits": {"per_user": {"messages_per_minute": 0.1, "burst": 3}}}
BUCKET = "user:slack.team:U_ALICE"


@pytest.fixture
async def replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    started = Replicas(pg_url, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    async with asyncio.timeout(WAIT_S):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def status(store: Store, message_id: str) -> InboxStatus | None:
    entry = await store.inbox.get(InboxKey(channel=str(SLACK), message_id=message_id))
    return None if entry is None else entry.status


async def finished(store: Store, *ids: str) -> None:
    async def check() -> bool:
        final = (InboxStatus.DONE, InboxStatus.FAILED)
        statuses = [await status(store, i) for i in ids]
        return all(s in final for s in statuses)

    await until(check)


def notices(*replicas: Replica) -> list[str]:
    return [t for r in replicas for t in r.channel.texts if "faster than I can take" in t]


async def test_replicas_share_a_senders_bucket(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=LIMITS)
    b = await replicas.start("b", extra=LIMITS)
    store = a.app.store

    await a.deliver(message("m1 first", "1"))
    await a.deliver(message("m2 second", "2"))
    await a.app.gateway.flush_rate_limits()  # what a took is in the table
    await b.app.gateway.flush_rate_limits()  # and b counts from it
    await b.deliver(message("m3 third", "3"))  # the bucket's last token
    await b.deliver(message("m4 fourth", "4"))  # refused by b, the sender told
    await b.app.gateway.flush_rate_limits()
    await a.app.gateway.flush_rate_limits()
    await a.deliver(message("m5 fifth", "5"))  # refused by a too, told no more
    await finished(store, "1", "2", "3", "4", "5")

    assert [await status(store, i) for i in "12345"] == [
        InboxStatus.DONE,
        InboxStatus.DONE,
        InboxStatus.DONE,
        InboxStatus.FAILED,
        InboxStatus.FAILED,
    ]
    refused = await store.inbox.get(InboxKey(channel=str(SLACK), message_id="5"))
    assert refused is not None and refused.error == RATE_LIMITED
    assert (a.app.gateway.rate_limited, b.app.gateway.rate_limited) == (1, 1)
    assert len(notices(a, b)) == 1
    [shared] = [s for s in await store.rate_limits.load() if s.bucket == BUCKET]
    assert shared.tokens < 1 and shared.noticed_at > 0
