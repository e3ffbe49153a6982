"""What parked turns cost: memory and rows while a thousand wait, and the database trips of
resuming one.

Runs the real daemon's parts in this process (``App`` on a real SQLite file, the in-process
channel, the model of the replica tests, the ``deploy`` tool that needs approval) with
``approval.wait_in_turn_s`` at 0.05 s: each message asks for ``deploy`` in its own
conversation, its card is posted, and its turn parks. Once ``--turns`` have parked it
prints

* the process's RSS growth (each turn in a conversation of its own, so what the daemon keeps
  per conversation counts too) and the Python heap's (``tracemalloc``, after the fake channel's
  records of what it sent are dropped: the platform keeps those) per parked turn, against a
  baseline taken after one warm-up turn; and how many asyncio tasks are left (the target:
  none per parked turn, and no more than a few KB outside the database);
* the rows each table gained, per parked turn, and the database file's size;
* resuming one (``hatchway approvals approve ID``'s decision, made in this process): every
  statement the database ran from the decision until the answer was sent and the parked
  record gone, counted with SQLite's trace callback (transactions, statements on
  ``parked_turns``, and those of the sweep that found it);
* a parked-turn sweep with ``--turns`` records waiting (its statements).

    python bench/parked.py [--turns 1000]

Figures are printed, never asserted. On a loaded machine the RSS figure moves with the
allocator; the heap figure is the one to read.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import gc
import logging
import sqlite3
import tempfile
import time
import tracemalloc
from collections.abc import Mapping
from typing import Any

import structlog

from bench.machine import describe_machine
from bench.smoke import parse_args
from bot.app import App
from bot.config import parse_settings
from bot.providers.base import CompletionRequest, ProviderReply, StreamSink, ToolCallRequest
from bot.store.parked import ParkState
from bot.tools.parking import RESUMED_HEAD
from tests.fakes.channel import FakeChannel
from tests.fakes.recording_tool import deploy_tool
from tests.fakes.replica_apps import APPROVER, SLACK, message

WAIT_S = 600.0
#: The bench's own reads while it counts, left out of the count.
OWN = "bench_own_read"


class DeployModel:
    """Asks for ``deploy`` once per turn and answers with its result; keeps nothing (the
    replica tests' model keeps an event per message, which would count here)."""

    name = "bench-model"

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        last = request.messages[-1]
        if last.role == "tool" or last.content.startswith(RESUMED_HEAD):
            result = last.content.splitlines()[-1].split("): ", 1)[-1]
            return ProviderReply(text=f"done: {result}", finish_reason="stop")
        call = ToolCallRequest(id="call-1", name="deploy", arguments='{"version": "2"}')
        return ProviderReply(text="", tool_calls=(call,), finish_reason="tool_calls")

    async def aclose(self) -> None:
        return None


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


class Trace:
    """Every statement of the store's SQLite connection while :attr:`on`."""

    def __init__(self) -> None:
        self.on = False
        self.statements: list[str] = []

    def __call__(self, statement: str) -> None:
        if self.on:
            self.statements.append(statement)


def settings_for(root: Path) -> Any:
    return parse_settings(
        {
            "state_dir": str(root),
            "storage": {"path": str(root / "hatchway.db")},
            "agent": {"turn_timeout_s": 600.0, "parallel_tools": False},
            "approval": {"timeout_s": 86_400.0, "wait_in_turn_s": 0.05},
            "channels": {"slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER]}}},
        },
        environ={},
        require_provider=False,
    )


async def row_counts(app: App) -> dict[str, int]:
    tables = await app.store.db.fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )
    counts = {}
    for row in tables:
        name = str(row["name"])
        got = await app.store.db.fetchone(f'SELECT COUNT(*) AS n FROM "{name}"')
        counts[name] = int(got["n"]) if got is not None else 0
    return counts


async def park(app: App, channel: FakeChannel, first: int, count: int) -> int:
    """``count`` turns, each in its own conversation, asked for deploy and parked; how many
    are parked now."""
    for n in range(first, first + count):
        await app.host.deliver(message(f"m{n} deploy please", f"{n}", conversation=f"C{n}"))
    async with asyncio.timeout(WAIT_S):
        while True:
            got = await app.store.db.fetchone(
                "SELECT COUNT(*) AS n FROM parked_turns WHERE state = ?", (ParkState.PARKED,)
            )
            parked = int(got["n"]) if got is not None else 0
            if parked >= first + count - 1:
                return parked
            await asyncio.sleep(0.05)


def forget_sent(channel: FakeChannel) -> None:
    """Drop what the fake channel recorded of what it sent (the platform holds that)."""
    channel.sent.clear()
    channel.keys.clear()
    channel.text_edits.clear()
    channel.posted.clear()
    channel.edits.clear()


def db_size(root: Path) -> int:
    return sum(f.stat().st_size for f in root.glob("hatchway.db*"))


def _short(filename: str) -> str:
    for mark in ("/bot/", "/tests/", "/lib/python"):
        if mark in filename:
            return mark.strip("/") + "/" + filename.split(mark, 1)[1]
    return filename


def settle() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def run(turns: int, show: bool = False) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    print(describe_machine())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        channel = FakeChannel(SLACK)
        ran: list[Mapping[str, object]] = []
        app = App(
            settings_for(root),
            provider=DeployModel(),
            channels={str(SLACK): channel},
            tools=[deploy_tool(ran)],
        )
        await app.start()
        try:
            await measure(app, channel, root, turns, ran, show)
        finally:
            await app.stop(drain_timeout_s=5.0)


async def measure(
    app: App,
    channel: FakeChannel,
    root: Path,
    turns: int,
    ran: list[Mapping[str, object]],
    show: bool,
) -> None:
    async with asyncio.timeout(30):
        await channel.running.wait()
    trace = Trace()

    def install(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(trace)

    await app.store.db._worker.submit(install)  # type: ignore[attr-defined]

    # warm-up: one turn parks (imports, caches, the first card's path)
    await park(app, channel, 1, 1)
    forget_sent(channel)
    tracemalloc.start()
    rows_before = await row_counts(app)
    tasks_before = len(asyncio.all_tasks())
    heap_before, rss_before = settle(), rss_bytes()
    first_snapshot = tracemalloc.take_snapshot()
    size_before = db_size(root)
    started = time.perf_counter()
    parked = await park(app, channel, 2, turns)
    took = time.perf_counter() - started
    # the turns' own tasks end once they park; wait for the last to finish
    async with asyncio.timeout(WAIT_S):
        while len(asyncio.all_tasks()) > tasks_before:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    forget_sent(channel)
    heap_after, rss_after = settle(), rss_bytes()
    top = tracemalloc.take_snapshot().compare_to(first_snapshot, "lineno")[:5]
    tasks_after = len(asyncio.all_tasks())
    rows_after = await row_counts(app)
    tracemalloc.stop()
    print(f"parked: {parked} turns ({turns} new) in {took:.1f} s")
    print(
        f"memory per parked turn: Python heap {(heap_after - heap_before) / turns:,.0f} B, "
        f"RSS {(rss_after - rss_before) / turns:,.0f} B "
        f"(heap +{(heap_after - heap_before) / 1e6:.2f} MB, "
        f"RSS +{(rss_after - rss_before) / 1e6:.2f} MB)"
    )
    print(
        "  where the heap grew (per parked turn): "
        + "; ".join(
            f"{_short(str(d.traceback[0].filename))}:{d.traceback[0].lineno} "
            f"{d.size_diff / turns:+,.0f} B"
            for d in top
        )
    )
    print(f"asyncio tasks: {tasks_before} before, {tasks_after} after ({turns} turns parked)")
    gained = {
        t: rows_after[t] - rows_before.get(t, 0)
        for t in sorted(rows_after)
        if rows_after[t] != rows_before.get(t, 0)
    }
    print(
        "rows per parked turn: "
        + ", ".join(f"{t} {n / turns:g}" for t, n in gained.items())
        + f"; {sum(gained.values()) / turns:g} in all"
    )
    size = db_size(root)
    print(
        f"database: {size / 1e6:.2f} MB with {parked} parked, "
        f"+{(size - size_before) / turns:,.0f} B per parked turn (file and WAL)"
    )

    # one sweep with them all waiting
    trace.statements.clear()
    trace.on = True
    await app.resumptions.sweep()
    trace.on = False
    sweep = list(trace.statements)
    print(f"a sweep with {parked} parked: {len(sweep)} statements")

    # resuming one: the decision, the sweep that finds it, the turn, the answer
    rows = await app.store.parked.rows(states=(ParkState.PARKED,))
    approval_id, row_id = rows[len(rows) // 2].approval_id, rows[len(rows) // 2].inbox.message_id
    trace.statements.clear()
    trace.on = True
    await app.approvals.decide_from_cli(approval_id, True, "operator:bench")
    await channel.wait_for("done: deployed v2", within_s=WAIT_S)
    async with asyncio.timeout(WAIT_S):
        # the entry settled is the only signal there is (this read is left out of the count)
        while True:
            row = await app.store.db.fetchone(
                f"SELECT status AS {OWN} FROM inbox WHERE channel = ? AND message_id = ?",
                (str(SLACK), row_id),
            )
            if row is not None and row[OWN] == "done":
                break
            await asyncio.sleep(0.01)
    trace.on = False
    statements = [s for s in trace.statements if OWN not in s]
    writes = sum(s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) for s in statements)
    transactions = sum(s.strip().upper().startswith("BEGIN") for s in statements)
    on_parked = sum("parked_turns" in s for s in statements)
    swept = sum(s in sweep for s in statements)
    print(
        f"resuming one: {len(statements)} statements ({transactions} transactions, "
        f"{writes} writes, {on_parked} on parked_turns, {swept} of sweeps) from the decision "
        "to the answer"
    )
    if show:
        for statement in statements:
            print("  " + " ".join(statement.split())[:160])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument(
        "--statements", action="store_true", help="print the resumption's statements"
    )
    args = parse_args(parser, smoke={"turns": 40})
    asyncio.run(run(args.turns, args.statements))


if __name__ == "__main__":
    main()
