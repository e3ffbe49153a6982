"""OutageLog: a task failing every second while the database cannot be reached logs one
warning, a reminder a minute, and one line when it is back; any other failure keeps its
traceback every time."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from bot.errors import StorageBusy, StorageError, StorageUnavailable
from bot.store.outage import REMIND_S, OutageLog, repeat


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_one_warning_then_quiet_then_one_line_when_back() -> None:
    clock = Clock()
    outage = OutageLog("handover_sweep", clock=clock)
    with structlog.testing.capture_logs() as logs:
        for _ in range(30):
            outage.failed(StorageUnavailable("cannot read database postgresql://h/db: refused"))
            clock.now += 1.0
        assert outage.paused
        outage.succeeded()
        outage.succeeded()
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("handover_sweep_paused", "warning"),
        ("handover_sweep_resumed", "info"),
    ]
    assert "refused" in logs[0]["error"]
    assert logs[1]["down_s"] == 30.0
    assert not outage.paused


def test_a_long_outage_is_recalled_each_minute() -> None:
    clock = Clock()
    outage = OutageLog("scheduler_tick", clock=clock)
    with structlog.testing.capture_logs() as logs:
        for _ in range(int(REMIND_S) * 2 + 1):
            outage.failed(StorageUnavailable("gone"))
            clock.now += 1.0
    assert [e["event"] for e in logs] == ["scheduler_tick_paused"] * 3
    assert [e.get("down_s") for e in logs] == [None, REMIND_S, 2 * REMIND_S]


def test_any_other_failure_keeps_its_traceback_every_time() -> None:
    outage = OutageLog("handover_sweep")
    bug = KeyError("session")
    with structlog.testing.capture_logs() as logs:
        outage.failed(bug)
        outage.failed(StorageBusy("locked"))
        outage.failed(bug)
    assert [(e["event"], e["log_level"]) for e in logs] == [("handover_sweep_failed", "error")] * 3
    assert logs[0]["exc_info"] is bug
    assert not outage.paused


def test_a_task_may_count_every_storage_error_as_an_outage() -> None:
    outage = OutageLog("reply_settling", quiet=(StorageError,))
    with structlog.testing.capture_logs() as logs:
        outage.failed(StorageBusy("locked"))
        outage.failed(StorageBusy("locked"))
        outage.succeeded()
    assert [e["event"] for e in logs] == ["reply_settling_paused", "reply_settling_resumed"]


async def test_repeat_goes_on_through_failures_and_logs_an_outage_once() -> None:
    failures: list[BaseException] = [
        StorageUnavailable("refused"),
        StorageUnavailable("refused"),
        StorageBusy("locked"),
    ]
    tries = 0
    done = asyncio.Event()

    async def step() -> None:
        nonlocal tries
        tries += 1
        if failures:
            raise failures.pop(0)
        if tries == 5:
            done.set()

    with structlog.testing.capture_logs() as logs:
        task = asyncio.create_task(repeat("sweep", step, lambda: 0.0, wait_first=False))
        await asyncio.wait_for(done.wait(), 10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert task.cancelled()
    events = [(e["event"], e["log_level"], "exc_info" in e) for e in logs]
    assert events == [
        ("sweep_paused", "warning", False),
        ("sweep_failed", "error", True),
        ("sweep_resumed", "info", False),
    ]
