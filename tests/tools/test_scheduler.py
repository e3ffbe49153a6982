"""The process-wide scheduler: limits, round-robin fairness, bounded queue."""

from __future__ import annotations

import asyncio

from bot.tools.scheduler import Lease, SchedulerLimits, ToolScheduler
from bot.tools.spec import ToolKind

ONE_AT_A_TIME = SchedulerLimits(per_session=4, per_kind={ToolKind.EXECUTE: 1}, max_queued=100)


async def test_two_sessions_saturating_the_scheduler_alternate() -> None:
    scheduler = ToolScheduler(ONE_AT_A_TIME)
    order: list[str] = []
    blocker = scheduler.enqueue("warmup", ToolKind.EXECUTE)
    assert blocker is not None

    async def work(name: str, lease: Lease) -> None:
        async with lease:
            order.append(name)
            await asyncio.sleep(0)

    async with asyncio.TaskGroup() as group, blocker:
        # session A queues all its calls first, then session B
        for name in ("a1", "a2", "a3", "b1", "b2", "b3"):
            lease = scheduler.enqueue(name[0], ToolKind.EXECUTE)
            assert lease is not None
            group.create_task(work(name, lease))
        await asyncio.sleep(0)
        assert order == []
    assert order == ["a1", "b1", "a2", "b2", "a3", "b3"]


async def test_per_session_limit_holds_while_another_session_runs() -> None:
    scheduler = ToolScheduler(SchedulerLimits(per_session=1, max_queued=10))
    first = scheduler.enqueue("s1", ToolKind.READ_ONLY)
    assert first is not None and first.granted
    second = scheduler.enqueue("s1", ToolKind.READ_ONLY)
    other = scheduler.enqueue("s2", ToolKind.READ_ONLY)
    assert second is not None and not second.granted
    assert other is not None and other.granted
    async with first:
        pass
    assert second.granted
    async with second, other:
        assert scheduler.running() == 2
    assert scheduler.running() == 0


async def test_per_kind_limit() -> None:
    scheduler = ToolScheduler(
        SchedulerLimits(per_session=10, per_kind={ToolKind.WRITE: 1}, max_queued=10)
    )
    write = scheduler.enqueue("s1", ToolKind.WRITE)
    queued_write = scheduler.enqueue("s2", ToolKind.WRITE)
    read = scheduler.enqueue("s2", ToolKind.READ_ONLY)
    assert write is not None and write.granted
    assert queued_write is not None and not queued_write.granted
    assert read is not None and read.granted  # another kind is not held up
    async with write:
        pass
    assert queued_write.granted
    async with queued_write, read:
        pass


async def test_a_full_queue_refuses_instead_of_waiting() -> None:
    scheduler = ToolScheduler(SchedulerLimits(per_session=1, max_queued=1))
    running = scheduler.enqueue("s", ToolKind.EXECUTE)
    waiting = scheduler.enqueue("s", ToolKind.EXECUTE)
    assert running is not None and waiting is not None
    assert scheduler.enqueue("s", ToolKind.EXECUTE) is None
    assert scheduler.queued == 1
    async with running:
        pass
    async with waiting:
        pass
    assert scheduler.queued == 0 and scheduler.running() == 0


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    scheduler = ToolScheduler(SchedulerLimits(per_session=1, max_queued=5))
    running = scheduler.enqueue("s", ToolKind.EXECUTE)
    waiting = scheduler.enqueue("s", ToolKind.EXECUTE)
    assert running is not None and waiting is not None
    entered = asyncio.Event()

    async def wait_for_slot() -> None:
        async with waiting:
            entered.set()

    task = asyncio.create_task(wait_for_slot())
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert scheduler.queued == 0 and not entered.is_set()
    async with running:
        pass
    assert scheduler.running() == 0
