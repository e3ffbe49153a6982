"""Claims on due runs between two replicas' schedulers over one real PostgreSQL database,
each with a recording ``deliver``: a replica whose claim ran out while it delivered (it
stalled longer than the claim) must not write over what the replica that took the run over
has recorded since, or an occurrence is delivered again and a later one never."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from bot.config import SchedulesConfig
from bot.envelope import IngressEnvelope
from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, StoredTarget
from bot.schedules.runner import CLAIM_S, ScheduleRunner, job_message_id
from bot.store import Store
from tests.fakes.channel import GUARD_S
from tests.schedules.conftest import Clock

ORIGIN = StoredTarget(channel="slack.team", conversation_id="C1")
START = datetime(2030, 1, 1, 10, 30, 10, tzinfo=UTC)


def every_minute() -> JobSpec:
    return JobSpec.model_validate(
        {
            "prompt": "tick",
            "cron": "* * * * *",
            "origin": ORIGIN,
            "target": ORIGIN,
            "creator_id": "U1",
        }
    )


class Stalling:
    """A ``deliver`` that records each envelope and, while ``held`` is clear, waits for it
    (a replica stalled mid-delivery: a slow database, a paused process)."""

    def __init__(self, delivered: list[str], *, stall: bool) -> None:
        self.delivered = delivered
        self.held = asyncio.Event()
        self.reached = asyncio.Event()
        if not stall:
            self.held.set()

    async def __call__(self, envelope: IngressEnvelope) -> None:
        self.delivered.append(envelope.message_id)
        self.reached.set()
        await self.held.wait()


async def test_a_replica_whose_claim_ran_out_does_not_rewind_the_next_run(
    pg_store: Store,
) -> None:
    clock = Clock(START)
    book = ScheduleBook(pg_store.schedules)
    settings = SchedulesConfig(misfire_grace_s=60)
    delivered: list[str] = []
    slow, quick = Stalling(delivered, stall=True), Stalling(delivered, stall=False)
    a = ScheduleRunner(book=book, deliver=slow, settings=settings, clock=clock, replica_id="a")
    b = ScheduleRunner(book=book, deliver=quick, settings=settings, clock=clock, replica_id="b")
    job = await book.add(every_minute(), now=clock.now)
    first = job.next_run_at
    assert first is not None

    clock.now = first + 1
    stalled = asyncio.create_task(a.tick())
    async with asyncio.timeout(GUARD_S):
        await slow.reached.wait()  # a claimed the run and is delivering it
    # a stays stalled past its claim: b takes the run over, then the next one comes due
    clock.now = first + 1 + CLAIM_S + 1
    assert await b.tick() == 1
    clock.now = first + 60 + 1
    assert await b.tick() == 1
    recorded = await book.get(job.id)
    assert recorded is not None and recorded.next_run_at == first + 120

    slow.held.set()  # a wakes up and records the run it delivered long ago
    async with asyncio.timeout(GUARD_S):
        await stalled
    after = await book.get(job.id)
    assert after is not None and after.next_run_at == first + 120

    clock.now = first + 120 + 1
    assert await b.tick() == 1
    assert delivered == [
        job_message_id(job.id, first),
        job_message_id(job.id, first),  # the run taken over: the inbox drops the copy
        job_message_id(job.id, first + 60),
        job_message_id(job.id, first + 120),
    ]
