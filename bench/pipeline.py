"""Overhead of the tool pipeline per no-op tool call.

Runs no-op calls through the real pipeline — parsing, admission, schema validation,
policy auto-approval through a gate, the duplicate guard, the per-turn gate, the
process-wide scheduler, execution with its timeout, observer events, the ``tool_calls`` row
and the history append on a real SQLite file (one transaction per batch) — and prints
median and p99 per call: wall clock, and the event-loop thread's own CPU (which leaves out
waiting for SQLite's worker thread and for other processes on a busy machine).

    python bench/pipeline.py [--calls 10000]

(from the project root; ``python -m bench.pipeline`` works too)

Targets on a 2-core machine: median < 1 ms, p99 < 5 ms per call.

It prints what an asked 20 KB ``file_edit``'s card costs, without its diff (the view alone)
and with it (:mod:`bot.tools.builtin.file_diff`'s preview and the view), side by side; and the
whole call through the pipeline (asked, approved at once by the gate, the file written, the
row committed), before diffs (the tool without ``approval_preview`` / ``approval_binding``)
and after (the preview, the binding in the fingerprint, the file hashed again under the path
lock), interleaved run by run so both see the same load.

It also prints what masking costs on the approval path: :func:`bot.approval.summary.describe`
(the card's summary and the full view: secret values masked, invisible characters escaped,
long values as head and tail) and the ``tool_calls`` row's scrub, for a short command with a
token in it, a 10,000-character command and a 20 KB file write. Target: median < 1 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import dataclasses
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping

import structlog

from bench.machine import describe_machine, percentile
from bench.smoke import parse_args
from bot.agent.turn import CancelToken
from bot.approval.gate import ApprovalDecision, ApprovalRequest, Assessment, PolicyResult
from bot.approval.reasons import PolicyReason
from bot.approval.summary import describe
from bot.config import AgentConfig, FileToolsConfig
from bot.envelope import (
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from bot.observe import LoggingObserver
from bot.progress import NullProgress
from bot.providers.base import ChatMessage, ToolCallRequest
from bot.scrub import scrub_mapping
from bot.store import Store, ToolCallRecord, UnitOfWork
from bot.store.audit import Decision
from bot.tools.builtin.file_diff import preview_edit
from bot.tools.builtin.file_writing import file_edit_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.pipeline import ToolPipeline
from bot.tools.registry import ToolRegistry
from bot.tools.services import PipelineServices
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec
from bot.turn import TurnIdentity

CALLS_PER_TURN = 60  # under the 64-per-turn admission limit


class AutoApprove:
    """A policy that auto-approves, as ``auto_approve`` does for read-only tools."""

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.AUTO_APPROVE)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(verdict=Decision.DENIED, decided_by="runtime")


async def noop(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    return "ok"


NOOP = ToolSpec(
    name="noop",
    description="does nothing",
    parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    handler=noop,
    requires_approval=False,
    kind=ToolKind.READ_ONLY,
    concurrency_safe=True,
)
CHANNEL = ChannelRef(kind="console", alias="main")
ENVELOPE = IngressEnvelope(
    channel=CHANNEL,
    message_id="m",
    conversation_id="c",
    sender=Sender(id="u"),
    text="bench",
    reply_target=DeliveryTarget(channel=CHANNEL, conversation_id="c"),
    capabilities=Capabilities(terminal_prompt=True),
)


def new_pipeline(services: PipelineServices, turn: int) -> ToolPipeline:
    session = "console.main:c"
    return ToolPipeline(
        services=services,
        executor=ToolRegistry([NOOP]).executor(),
        context=ToolContext(
            turn=TurnIdentity(turn_id=f"turn-{turn}", session_key=session, envelope=ENVELOPE)
        ),
        progress=NullProgress(),
        cancel=CancelToken(),
    )


async def measure(
    store: Store, calls: int, batch_size: int, clock: Callable[[], float] = time.perf_counter
) -> list[float]:
    """Seconds per call by ``clock``, one sample per batch (batch time / batch size).
    With ``time.thread_time`` only the event loop thread's own CPU counts: the pipeline's
    work without the wait for SQLite's thread and for other processes."""
    services = PipelineServices(
        store=store, gate=AutoApprove(), settings=AgentConfig(), observer=LoggingObserver()
    )
    samples: list[float] = []
    pipeline = new_pipeline(services, 0)
    in_turn = 0
    n = 0
    while n < calls:
        if in_turn + batch_size > CALLS_PER_TURN:
            pipeline = new_pipeline(services, n)
            in_turn = 0
        batch = [
            ToolCallRequest(id=f"c{n + i}", name="noop", arguments=f'{{"n": {n + i}}}')
            for i in range(batch_size)
        ]
        started = clock()
        await pipeline.run_batch("", batch)
        samples.append((clock() - started) / batch_size)
        in_turn += batch_size
        n += batch_size
    return samples


async def measure_commit(store: Store, steps: int) -> list[float]:
    """The step's commit alone: one ``tool_calls`` row and two history messages in one
    transaction (the store's cost, paid once per step whatever its size)."""
    record = ToolCallRecord(
        turn_id="t",
        call_id="c",
        session_key="s",
        channel="console.main",
        tool="noop",
        arguments="{}",
        status="executed",
        synthetic=False,
        observation="ok",
        duration_ms=0.0,
    )
    messages = [
        ChatMessage(
            role="assistant", tool_calls=(ToolCallRequest(id="c", name="noop", arguments="{}"),)
        ),
        ChatMessage(role="tool", content="ok", tool_call_id="c", name="noop"),
    ]
    samples: list[float] = []
    for _ in range(steps):
        started = time.perf_counter()
        work = UnitOfWork().record_tool_calls([record])
        await store.commit(work.append_history("bench:commit", "t", messages))
        samples.append(time.perf_counter() - started)
    return samples


MASKING_CASES: dict[str, dict[str, object]] = {
    "short command with a token": {
        "command": "curl -H 'Authorization: Bearer abcdefgh12345678' "
        "https://api.example.com/v1/items?token=zz9900aa && echo done",
        "cwd": "/srv/app",
    },
    "10,000-char command": {"command": "echo " + "a1b2;c3 " * 1249},
    "20 KB file write": {
        "path": "notes/report.md",
        "content": ("line with password=hunter22 and text\n" * 540)[:20_000],
    },
}


def measure_masking(arguments: Mapping[str, object], runs: int) -> list[float]:
    """Seconds per call for what an asked call costs in masking: the approval view and the
    ``tool_calls`` row's scrub."""
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        describe(arguments)
        scrub_mapping(arguments)
        samples.append(time.perf_counter() - started)
    return samples


EDIT_FILE = "".join(f"line {i:05d} of the report, with some text\n" for i in range(460))  # 20 KB
EDIT = {"path": "report.md", "old_text": "line 00230 of", "new_text": "LINE 00230 OF"}


async def measure_edit_view(folder: Path, runs: int, *, with_diff: bool) -> list[float]:
    """Seconds per asked 20 KB ``file_edit`` for what its card costs: the approval view alone
    (before diffs), or the preview (path resolved, file read and hashed, diff in a worker
    thread) and the view with the diff."""
    root = folder / "workspace"
    root.mkdir(exist_ok=True)
    (root / "report.md").write_text(EDIT_FILE, encoding="utf-8")
    workspace = Workspace(root=root, allow_sensitive_files=False, scope="shared")
    context = ToolContext(
        turn=TurnIdentity(turn_id="turn-edit", session_key="console.main:c", envelope=ENVELOPE)
    )
    change = (str(EDIT["old_text"]), str(EDIT["new_text"]), False)
    samples: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        if with_diff:
            shown = await preview_edit(workspace, context, "report.md", change)
            describe(EDIT, diff=shown.diff)
        else:
            describe(EDIT)
        samples.append(time.perf_counter() - started)
    return samples


class AskAndApprove:
    """A policy that asks about every side-effecting call, and a person who approves at once:
    the pipeline's approval path without the wait."""

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return PolicyResult(assessment=Assessment.ASK, reason=PolicyReason.SIDE_EFFECTS)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        describe(request.arguments, notes=request.notes, diff=request.diff)  # the card's view
        return ApprovalDecision(verdict=Decision.APPROVED, decided_by="bench")


async def measure_edit_calls(store: Store, folder: Path, runs: int) -> dict[bool, list[float]]:
    """Seconds per asked 20 KB ``file_edit`` through the whole pipeline, by whether the tool
    previews its diff (``True``: after) or not (``False``: before diffs); the two alternate
    run by run. The file is put back before each call, outside the timing."""
    root = folder / "workspace-calls"
    root.mkdir(exist_ok=True)
    workspace = Workspace(root=root, allow_sensitive_files=False, scope="shared")
    after = file_edit_tool(workspace, FileToolsConfig())
    before = dataclasses.replace(after, approval_preview=None, approval_binding=None)
    services = PipelineServices(
        store=store, gate=AskAndApprove(), settings=AgentConfig(), observer=LoggingObserver()
    )
    arguments = json.dumps(EDIT)
    samples: dict[bool, list[float]] = {False: [], True: []}
    for run in range(runs):
        for with_diff in (run % 2 == 0, run % 2 == 1):
            (root / "report.md").write_text(EDIT_FILE, encoding="utf-8")
            pipeline = ToolPipeline(
                services=services,
                executor=ToolRegistry([after if with_diff else before]).executor(),
                context=ToolContext(
                    turn=TurnIdentity(
                        turn_id=f"turn-edit-{run}-{with_diff}",
                        session_key="console.main:c",
                        envelope=ENVELOPE,
                    )
                ),
                progress=NullProgress(),
                cancel=CancelToken(),
            )
            call = ToolCallRequest(id=f"e{run}", name="file_edit", arguments=arguments)
            started = time.perf_counter()
            report = await pipeline.run_batch("", [call])
            samples[with_diff].append(time.perf_counter() - started)
            assert report.outcomes[0].ok, report.outcomes[0].observation
    return samples


def report(label: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    median = statistics.median(ordered) * 1000
    p99 = percentile(ordered, 0.99) * 1000
    print(f"{label:<36} n={len(samples):>6}  median={median:6.3f} ms  p99={p99:6.3f} ms")


async def main(calls: int) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(describe_machine())
    with tempfile.TemporaryDirectory() as folder:
        async with await Store.open(Path(folder) / "bench.db") as store:
            await measure(store, 500, 1)  # warm-up
            for size in (1, 10):
                label = f"{size} call(s)/batch, wall clock"
                report(label, await measure(store, calls, size))
                label = f"{size} call(s)/batch, loop-thread CPU"
                report(label, await measure(store, calls, size, time.thread_time))
            report("per-step commit alone, wall clock", await measure_commit(store, calls))
        runs = max(100, calls // 10)
        for with_diff in (False, True):
            label = f"asked 20 KB file_edit, {'with' if with_diff else 'no'} diff"
            report(label, await measure_edit_view(Path(folder), runs, with_diff=with_diff))
        async with await Store.open(Path(folder) / "bench-edit.db") as store:
            await measure_edit_calls(store, Path(folder), 20)  # warm-up
            calls_by = await measure_edit_calls(store, Path(folder), runs)
            for with_diff in (False, True):
                label = f"asked 20 KB file_edit call, {'after' if with_diff else 'before'}"
                report(label, calls_by[with_diff])
    runs = max(100, calls // 10)
    for name, arguments in MASKING_CASES.items():
        report(f"masking: {name}", measure_masking(arguments, runs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    asyncio.run(main(parse_args(parser, smoke={"calls": 300}).calls))
