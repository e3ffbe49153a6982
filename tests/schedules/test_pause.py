"""Pausing and resuming a job (the web console's schedules page), on a real store with the
runner ticking under a hand-moved clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import SchedulesConfig
from bot.envelope import IngressEnvelope
from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, ScheduleError
from bot.schedules.recurrence import parse_time
from bot.schedules.runner import ScheduleRunner
from bot.schedules.tools import schedule_tools
from bot.store import Store
from tests.schedules.conftest import Clock
from tests.schedules.test_cli_and_tools import add_job, context
from tests.schedules.test_runner import ORIGIN, START, hourly, runner, ts


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "hatchway.db") as opened:
        yield opened


async def test_a_paused_job_does_not_run_and_resumes_from_now(store: Store) -> None:
    clock = Clock(START)
    run, recorder, book = runner(store, clock)
    job = await book.add(hourly(), now=clock.now)
    assert await book.pause(job.id)
    assert not await book.pause(job.id)  # already paused
    paused = await book.get(job.id)
    assert paused is not None and paused.paused and paused.next_run_at == job.next_run_at
    clock.set(datetime(2030, 1, 1, 14, 10, tzinfo=UTC))  # 11:00 … 14:00 came while paused
    assert await run.tick() == 0
    resumed = await book.resume(job.id, now=clock.now)
    assert resumed is not None and resumed.enabled and not resumed.paused
    assert resumed.next_run_at == ts(2030, 1, 1, 15, 0)  # nothing caught up
    assert await book.resume(job.id, now=clock.now) is None  # not paused any more
    clock.set(datetime(2030, 1, 1, 15, 0, 5, tzinfo=UTC))
    assert await run.tick() == 1
    assert len(recorder.envelopes) == 1


async def test_a_job_paused_while_its_run_is_delivered_stays_paused(store: Store) -> None:
    clock = Clock(START)
    book = ScheduleBook(store.schedules)
    job = await book.add(hourly(), now=clock.now)

    async def deliver_and_pause(envelope: IngressEnvelope) -> None:
        await book.pause(job.id)  # an admin clicks Pause as the run goes out

    run = ScheduleRunner(
        book=book,
        deliver=deliver_and_pause,
        settings=SchedulesConfig(misfire_grace_s=60),
        clock=clock,
    )
    clock.set(datetime(2030, 1, 1, 11, 0, 5, tzinfo=UTC))
    assert await run.tick() == 1
    after = await book.get(job.id)
    assert after is not None and after.paused
    assert after.next_run_at == ts(2030, 1, 1, 12, 0) and after.last_run_at == clock.now


async def test_finished_and_unknown_jobs_are_neither_paused_nor_resumed(store: Store) -> None:
    clock = Clock(START)
    run, _recorder, book = runner(store, clock)
    once = JobSpec(
        prompt="standup",
        at=parse_time("2030-01-01T11:00", "UTC"),
        origin=ORIGIN,
        target=ORIGIN,
        creator_id="U1",
    )
    job = await book.add(once, now=clock.now)
    clock.set(datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
    assert await run.tick() == 1
    assert not await book.pause(job.id)  # finished: nothing to pause
    assert await book.resume(job.id, now=clock.now) is None
    assert not await book.pause("nope")
    assert await book.resume("nope", now=clock.now) is None


async def test_a_one_shot_job_whose_time_passed_while_paused_cannot_resume(store: Store) -> None:
    clock = Clock(START)
    _run, _recorder, book = runner(store, clock)
    once = JobSpec(
        prompt="standup",
        at=parse_time("2030-01-01T11:00", "UTC"),
        origin=ORIGIN,
        target=ORIGIN,
        creator_id="U1",
    )
    job = await book.add(once, now=clock.now)
    assert await book.pause(job.id)
    clock.set(datetime(2030, 1, 1, 12, 0, tzinfo=UTC))
    with pytest.raises(ScheduleError, match="passed while it was paused"):
        await book.resume(job.id, now=clock.now)
    still = await book.get(job.id)
    assert still is not None and still.paused  # left as it was: the admin removes it


def test_the_cli_lists_a_paused_job_as_paused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text('[storage]\npath = "state.db"\n', encoding="utf-8")
    job_id = asyncio.run(add_job(tmp_path / "state.db"))

    async def pause() -> None:
        async with await Store.open(tmp_path / "state.db") as opened:
            assert await ScheduleBook(opened.schedules).pause(job_id)

    asyncio.run(pause())
    assert main(["schedules", "list", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    assert job_id in listed and " paused " in listed


async def test_the_conversation_sees_its_paused_job_as_paused(tmp_path: Path) -> None:
    job_id = await add_job(tmp_path / "state.db")
    async with await Store.open(tmp_path / "state.db") as opened:
        book = ScheduleBook(opened.schedules)
        listing = next(t for t in schedule_tools(book) if t.name == "schedule_list")
        assert listing.handler is not None
        before = str(await listing.handler({}, context()))
        assert job_id in before and "; next " in before
        assert await book.pause(job_id)
        after = str(await listing.handler({}, context()))
        assert job_id in after and "paused by an admin" in after and "; next " not in after
