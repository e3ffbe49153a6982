"""Scheduled jobs with two replicas over one real PostgreSQL database: each runs a scheduler,
and a due run is claimed by one of them, so it is delivered, run and answered once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.schedules.job import JobSpec, StoredTarget
from bot.store import InboxStatus
from tests.fakes.replica_apps import REQUESTER, SLACK, Replicas
from tests.schedules.conftest import Clock

START = datetime(2030, 4, 10, 12, 0, tzinfo=UTC)
WAIT_S = 60.0


@pytest.fixture
async def replicas(pg_url: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    started = Replicas(pg_url, tmp_path)
    try:
        yield started
    finally:
        await started.aclose()


def daily(prompt: str) -> JobSpec:
    place = StoredTarget(channel=str(SLACK), conversation_id="C3")
    return JobSpec(
        prompt=prompt,
        cron="0 9 * * *",
        timezone="UTC",
        origin=place,
        target=place,
        creator_id=REQUESTER,
        creator_name="Alice",
        origin_is_group=True,
    )


async def test_a_due_run_is_delivered_and_answered_once_with_two_replicas(
    replicas: Replicas,
) -> None:
    clock = Clock(START)
    schedules = {"schedules": {"tick_s": 3600.0}}
    a = await replicas.start("a", clock=clock, extra=schedules)
    b = await replicas.start("b", clock=clock, extra=schedules)
    job = await a.app.schedule_book.add(daily("m5 time to stretch"), now=clock())
    assert job.next_run_at is not None

    for day in range(2):  # two occurrences, both schedulers ticking at once each time
        clock.now = job.next_run_at + 30 + day * 86400
        delivered = await asyncio.gather(a.app.scheduler.tick(), b.app.scheduler.tick())
        assert sorted(delivered) == [0, 1]
        assert await asyncio.gather(a.app.scheduler.tick(), b.app.scheduler.tick()) == [0, 0]

        async def answered(n: int = day + 1) -> bool:
            """The run's answer sent and its inbox entry settled (marked just after the
            reply is sent: seeing the answer is not enough)."""
            texts = a.channel.texts + b.channel.texts
            if len([t for t in texts if t == "answer m5"]) < n:
                return False
            counts = await a.app.store.inbox.counts()
            return counts.get(InboxStatus.DONE, 0) >= n

        async with asyncio.timeout(WAIT_S):
            while not await answered():  # noqa: ASYNC110
                await asyncio.sleep(0.05)

    assert len(replicas.log) == 2 and {tag for _, tag in replicas.log} == {"m5"}
    texts = a.channel.texts + b.channel.texts
    assert texts.count("answer m5") == 2
    counts = await a.app.store.inbox.counts()
    assert counts.get(InboxStatus.DONE, 0) == 2 and sum(counts.values()) == 2
    stored = await a.app.schedule_book.get(job.id)
    assert stored is not None and stored.next_run_at == job.next_run_at + 2 * 86400
