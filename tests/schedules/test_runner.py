"""The runner's missed-run policy and one-shot jobs, on a real store with a recording
``deliver``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import pytest

from bot.config import SchedulesConfig
from bot.envelope import IngressEnvelope
from bot.schedules.book import ScheduleBook
from bot.schedules.job import DeliveryMode, JobSpec, ScheduleError, StoredTarget
from bot.schedules.recurrence import parse_time
from bot.schedules.runner import ScheduleRunner, job_message_id
from bot.store import Store
from tests.schedules.conftest import Clock

ORIGIN = StoredTarget(channel="slack.team", conversation_id="C1", thread_id="T1")
OTHER = StoredTarget(channel="telegram.main", conversation_id="99")
START = datetime(2030, 1, 1, 10, 30, tzinfo=UTC)


def ts(year: int, month: int, day: int, hour: int, minute: int) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    async with await Store.open(tmp_path / "hatchway.db") as opened:
        yield opened


class Recorder:
    def __init__(self) -> None:
        self.envelopes: list[IngressEnvelope] = []

    async def __call__(self, envelope: IngressEnvelope) -> None:
        self.envelopes.append(envelope)


def hourly(**extra: object) -> JobSpec:
    fields: dict[str, object] = {
        "prompt": "check the queue",
        "cron": "0 * * * *",
        "origin": ORIGIN,
        "target": ORIGIN,
        "creator_id": "U1",
    }
    fields.update(extra)
    return JobSpec.model_validate(fields)


def runner(
    store: Store, clock: Clock, policy: Literal["skip", "run_once"] = "run_once"
) -> tuple[ScheduleRunner, Recorder, ScheduleBook]:
    book = ScheduleBook(store.schedules)
    recorder = Recorder()
    settings = SchedulesConfig(missed_run_policy=policy, misfire_grace_s=60)
    return (
        ScheduleRunner(book=book, deliver=recorder, settings=settings, clock=clock),
        recorder,
        book,
    )


async def test_on_time_run_builds_a_background_envelope(store: Store) -> None:
    clock = Clock(START)
    run, recorder, book = runner(store, clock)
    job = await book.add(hourly(target=OTHER, name="queue"), now=clock.now)
    clock.set(datetime(2030, 1, 1, 11, 0, 20, tzinfo=UTC))
    assert await run.tick() == 1
    (envelope,) = recorder.envelopes
    assert envelope.background is True
    assert envelope.announce is True
    assert envelope.message_id == job_message_id(job.id, ts(2030, 1, 1, 11, 0))
    assert envelope.message_id == f"schedule:{job.id}:{int(ts(2030, 1, 1, 11, 0))}"
    assert str(envelope.channel) == "slack.team"
    assert envelope.conversation_id == "C1" and envelope.thread_id == "T1"
    assert str(envelope.reply_target.channel) == "telegram.main"
    assert envelope.reply_target.conversation_id == "99"
    assert envelope.sender.id == "U1"
    assert not envelope.capabilities.terminal_prompt
    assert not envelope.capabilities.approval_backchannel
    assert "check the queue" in envelope.text
    assert not envelope.text.startswith("/")


@pytest.mark.parametrize(
    ("policy", "delivered"),
    [("run_once", 1), ("skip", 0)],
)
async def test_missed_runs_after_downtime(
    store: Store, policy: Literal["skip", "run_once"], delivered: int
) -> None:
    clock = Clock(START)
    run, recorder, book = runner(store, clock, policy)
    job = await book.add(hourly(), now=clock.now)
    clock.set(datetime(2030, 1, 1, 15, 10, tzinfo=UTC))  # 11:00 … 15:00 were missed
    assert await run.tick() == delivered
    assert len(recorder.envelopes) == delivered
    if delivered:
        assert recorder.envelopes[0].message_id == job_message_id(job.id, ts(2030, 1, 1, 11, 0))
    after = await book.get(job.id)
    assert after is not None
    assert after.next_run_at == ts(2030, 1, 1, 16, 0)  # continue from now
    assert await run.tick() == 0


async def test_one_shot_runs_once_then_is_finished(store: Store) -> None:
    clock = Clock(START)
    run, recorder, book = runner(store, clock)
    spec = JobSpec(
        prompt="standup",
        at=parse_time("2030-01-01T12:00", "Europe/Berlin"),
        timezone="Europe/Berlin",
        origin=ORIGIN,
        target=ORIGIN,
        creator_id="U1",
        delivery=DeliveryMode.NONE,
    )
    job = await book.add(spec, now=clock.now)
    assert job.next_run_at == ts(2030, 1, 1, 11, 0)
    clock.set(datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
    assert await run.tick() == 1
    assert recorder.envelopes[0].announce is False
    finished = await book.get(job.id)
    assert finished is not None and not finished.enabled and finished.next_run_at is None
    clock.set(datetime(2030, 1, 2, 11, 0, tzinfo=UTC))
    assert await run.tick() == 0


async def test_per_conversation_limit(store: Store) -> None:
    clock = Clock(START)
    book = ScheduleBook(store.schedules, max_per_conversation=2)
    await book.add(hourly(), now=clock.now)
    await book.add(hourly(), now=clock.now)
    with pytest.raises(ScheduleError, match="limit"):
        await book.add(hourly(), now=clock.now)
    other_conversation = StoredTarget(channel="slack.team", conversation_id="C2")
    await book.add(hourly(origin=other_conversation, target=other_conversation), now=clock.now)


async def test_unreadable_row_is_skipped_not_fatal(store: Store) -> None:
    from bot.store.schedules import ScheduleRow

    clock = Clock(START)
    run, _recorder, book = runner(store, clock)
    await store.schedules.add(
        ScheduleRow(
            id="broken",
            spec='{"prompt": ""}',
            next_run_at=clock.now - 1,
            last_run_at=None,
            enabled=True,
            created_at=clock.now,
        )
    )
    good = await book.add(hourly(), now=clock.now)
    assert [j.id for j in await book.jobs()] == [good.id]
    assert await run.tick() == 0
