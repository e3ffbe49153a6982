"""Execution rules (pipeline.md §5): order, parallelism, the per-turn gate, cancellation,
timeouts and retries. Ordering is observed with events, never with timing."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Mapping

import pytest

from bot.approval.gate import Assessment
from bot.config import AgentConfig
from bot.store import Store
from bot.tools.hooks import HookCall, HookDecision, ToolHooks
from bot.tools.outcome import OutcomeReason, OutcomeStatus
from bot.tools.scheduler import SchedulerLimits, ToolScheduler
from bot.tools.spec import ToolContext, ToolHandler, ToolKind, ToolResult
from tests.fakes.scripted_provider import call
from tests.tools.gates import PolicyGate, WaitingGate
from tests.tools.harness import Harness, Recorder, spec


class Overlap:
    """Tracks how many handlers run at once and in which order they start and end."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.log: list[str] = []

    def handler(self, name: str, gate: asyncio.Event | None = None) -> ToolHandler:
        async def run(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.log.append(f"start {name}")
            try:
                await asyncio.sleep(0)
                if gate is not None:
                    await gate.wait()
                await asyncio.sleep(0)
            finally:
                self.running -= 1
                self.log.append(f"end {name}")
            return name

        return run


async def test_parallel_calls_finishing_out_of_order_land_in_model_order(store: Store) -> None:
    first_may_finish = asyncio.Event()
    finished: list[str] = []

    async def slow(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        await first_may_finish.wait()
        finished.append("slow")
        return "slow result"

    async def fast(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        finished.append("fast")
        first_may_finish.set()
        return "fast result"

    harness = Harness(
        store,
        [spec("slow", slow, concurrency_safe=True), spec("fast", fast, concurrency_safe=True)],
    )
    a, b = call("slow"), call("fast")
    report = await harness.run(a, b)
    assert finished == ["fast", "slow"]  # they really finished out of order
    assert [o.call_id for o in report.outcomes] == [a.id, b.id]
    assert [o.observation for o in report.outcomes] == ["slow result", "fast result"]
    history = await store.history.load(harness.session_key)
    assert [m.role for m in history] == ["assistant", "tool", "tool"]
    assert [m.tool_call_id for m in history[1:]] == [a.id, b.id]


@pytest.mark.parametrize(
    ("parallel_tools", "second", "expect_overlap"),
    [
        (True, "b", True),
        (False, "b", False),
        (True, "tool_search", False),  # a batch with tool_search runs sequentially
        (True, "asks", False),  # a batch where a call needed a prompt runs sequentially
    ],
)
async def test_when_calls_run_in_parallel(
    store: Store, parallel_tools: bool, second: str, expect_overlap: bool
) -> None:
    overlap = Overlap()
    both_started = asyncio.Event()

    async def a(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        overlap.running += 1
        overlap.peak = max(overlap.peak, overlap.running)
        if overlap.running == 2:
            both_started.set()
        # wait a few loop turns for the other call; sequential dispatch never gets there
        for _ in range(20):
            await asyncio.sleep(0)
        overlap.running -= 1
        return "a"

    gate = PolicyGate(policy={"asks": Assessment.ASK})
    harness = Harness(
        store,
        [spec(n, a, concurrency_safe=True) for n in ("a", "b", "tool_search", "asks")],
        gate=gate,
        settings=AgentConfig(parallel_tools=parallel_tools),
    )
    report = await harness.run(call("a"), call(second))
    assert all(o.ok for o in report.outcomes)
    assert (overlap.peak == 2) is expect_overlap


async def test_a_queued_write_is_never_overtaken_by_a_later_read(store: Store) -> None:
    overlap = Overlap()
    release_first_read = asyncio.Event()
    harness = Harness(
        store,
        [
            spec("read1", overlap.handler("read1", release_first_read), concurrency_safe=True),
            spec("write", overlap.handler("write")),
            spec("read2", overlap.handler("read2"), concurrency_safe=True),
        ],
    )
    task = harness.run_task(call("read1"), call("write"), call("read2"))
    for _ in range(50):  # give read2 every chance to overtake the queued write
        await asyncio.sleep(0)
    assert overlap.log == ["start read1"]
    release_first_read.set()
    report = await task
    assert all(o.ok for o in report.outcomes)
    assert overlap.log == [
        "start read1",
        "end read1",
        "start write",
        "end write",
        "start read2",
        "end read2",
    ]


async def test_shared_calls_overlap_behind_no_writer(store: Store) -> None:
    overlap = Overlap()
    both = asyncio.Event()

    async def read(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        overlap.running += 1
        if overlap.running == 2:
            both.set()
        await both.wait()  # deadlocks unless both reads run together
        overlap.running -= 1
        return "r"

    harness = Harness(store, [spec("read", read, concurrency_safe=True, dedup_exempt=True)])
    report = await harness.run(call("read"), call("read"))
    assert all(o.ok for o in report.outcomes)


async def test_cancel_during_a_parallel_batch_interrupts_only_unfinished_calls(
    store: Store,
) -> None:
    done_event = asyncio.Event()
    blocked_started = asyncio.Event()

    async def quick(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        done_event.set()
        return "quick result"

    async def blocked(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        blocked_started.set()
        await asyncio.Event().wait()
        return "never"

    harness = Harness(
        store,
        [
            spec("quick", quick, concurrency_safe=True),
            spec("blocked", blocked, concurrency_safe=True),
        ],
    )
    a, b = call("quick"), call("blocked")
    task = harness.run_task(a, b)
    await done_event.wait()
    await blocked_started.wait()
    harness.cancel.cancel()
    report = await task
    assert report.outcomes[0].ok and report.outcomes[0].observation == "quick result"
    assert report.outcomes[1].status is OutcomeStatus.INTERRUPTED
    assert not report.outcomes[1].aborted_before_launch  # it had launched
    rows = await store.tool_calls.for_turn(harness.turn_id)
    assert sorted(r.call_id for r in rows) == sorted([a.id, b.id])  # never reported twice
    finished = [e.call_id for e in harness.observer.finished]
    assert sorted(finished) == sorted([a.id, b.id])


async def test_sequential_dispatch_launches_nothing_after_cancel(store: Store) -> None:
    later = Recorder()
    harness: Harness

    async def stopper(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        harness.cancel.cancel()
        return "stopped the turn"

    harness = Harness(
        store,
        [spec("stopper", stopper), spec("later", later)],
        settings=AgentConfig(parallel_tools=False),
    )
    report = await harness.run(call("stopper"), call("later"))
    assert report.outcomes[0].ok  # finished: keeps its real result
    assert report.outcomes[1].status is OutcomeStatus.INTERRUPTED
    assert report.outcomes[1].aborted_before_launch
    assert report.outcomes[1].observation.startswith("Interrupted before launch")
    assert later.calls == []


@pytest.mark.parametrize("calls", [1, 2])
async def test_sequential_calls_run_in_the_turns_own_task(store: Store, calls: int) -> None:
    """No task per call: a sequential batch (every one-call batch) runs where the turn runs."""
    tasks: list[asyncio.Task[object] | None] = []

    async def where(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        tasks.append(asyncio.current_task())
        return "here"

    harness = Harness(
        store,
        [spec("where", where, dedup_exempt=True)],
        settings=AgentConfig(parallel_tools=False),
    )
    report = await harness.run(*[call("where") for _ in range(calls)])
    assert all(o.ok for o in report.outcomes)
    assert tasks == [asyncio.current_task()] * calls


async def test_an_interrupted_rewritten_call_names_the_tool_it_ran_as(store: Store) -> None:
    started = asyncio.Event()

    async def slow(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def to_slow(hook_call: HookCall) -> HookDecision:
        return HookDecision(name="slow")

    harness = Harness(
        store,
        [spec("asked_for", Recorder()), spec("slow", slow)],
        hooks=ToolHooks(before=(to_slow,)),
    )
    task = harness.run_task(call("asked_for"))
    await started.wait()
    harness.cancel.cancel()
    (outcome,) = (await task).outcomes
    assert outcome.status is OutcomeStatus.INTERRUPTED and not outcome.aborted_before_launch
    assert outcome.tool == "slow"
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.tool == "slow"


async def test_cancel_while_waiting_for_approval_launches_nothing(store: Store) -> None:
    gate = WaitingGate()
    risky = Recorder()
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    task = harness.run_task(call("risky"))
    await gate.waiting.wait()
    harness.cancel.cancel()
    (outcome,) = (await task).outcomes
    assert outcome.status is OutcomeStatus.INTERRUPTED and outcome.aborted_before_launch
    assert risky.calls == []
    assert harness.progress.events == [("waiting", "risky"), ("resolved", "risky")]


async def test_a_tool_timeout_is_a_failed_execution(store: Store) -> None:
    async def hangs(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        await asyncio.Event().wait()
        return "never"

    harness = Harness(store, [spec("hangs", hangs, timeout_s=0.01)])
    (outcome,) = (await harness.run(call("hangs"))).outcomes
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.failed
    assert outcome.observation.startswith("ToolTimeoutError: hangs did not finish within")


def flaky(failures: int, code: int, attempts: list[int]) -> ToolHandler:
    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        attempts.append(1)
        if len(attempts) <= failures:
            raise OSError(code, "resource busy")
        return "done"

    return handler


@pytest.mark.parametrize(
    ("retry_safe", "code", "runs", "ok"),
    [
        (True, errno.EBUSY, 2, True),
        (True, errno.EAGAIN, 2, True),
        (False, errno.EBUSY, 1, False),
        (True, errno.ENOENT, 1, False),  # not transient
    ],
)
async def test_retries_only_retry_safe_tools_on_transient_os_errors(
    store: Store, retry_safe: bool, code: int, runs: int, ok: bool
) -> None:
    attempts: list[int] = []
    harness = Harness(store, [spec("io", flaky(1, code, attempts), retry_safe=retry_safe)])
    (outcome,) = (await harness.run(call("io"))).outcomes
    assert len(attempts) == runs
    assert outcome.ok is ok


async def test_at_most_two_more_attempts(store: Store) -> None:
    attempts: list[int] = []
    harness = Harness(store, [spec("io", flaky(10, errno.EBUSY, attempts), retry_safe=True)])
    (outcome,) = (await harness.run(call("io"))).outcomes
    assert len(attempts) == 3
    assert outcome.failed and outcome.observation.startswith("OSError:")


async def test_a_returned_failure_is_not_retried(store: Store) -> None:
    attempts: list[int] = []

    async def says_no(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        attempts.append(1)
        raise ValueError("bad input")

    harness = Harness(store, [spec("io", says_no, retry_safe=True)])
    (outcome,) = (await harness.run(call("io"))).outcomes
    assert outcome.failed and len(attempts) == 1


async def test_cancel_during_backoff_stops_retries(store: Store) -> None:
    attempts: list[int] = []
    failed_once = asyncio.Event()

    async def busy(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        attempts.append(1)
        failed_once.set()
        raise OSError(errno.EBUSY, "busy")

    harness = Harness(store, [spec("io", busy, retry_safe=True)])
    task = harness.run_task(call("io"))
    await failed_once.wait()
    harness.cancel.cancel()
    (outcome,) = (await task).outcomes
    assert len(attempts) == 1
    assert outcome.status is OutcomeStatus.INTERRUPTED
    assert not outcome.aborted_before_launch  # it ran once: never claim nothing happened


async def test_busy_scheduler_gives_a_retryable_outcome(store: Store) -> None:
    full = ToolScheduler(
        SchedulerLimits(per_session=1, per_kind={ToolKind.EXECUTE: 1}, max_queued=0)
    )
    blocker = full.enqueue("other-session", ToolKind.EXECUTE)
    assert blocker is not None
    echo = Recorder()
    async with blocker:
        harness = Harness(store, [spec("echo", echo)], scheduler=full)
        (outcome,) = (await harness.run(call("echo"))).outcomes
    assert outcome.reason is OutcomeReason.BUSY and outcome.retryable
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and echo.calls == []
