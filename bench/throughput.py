"""Turns per second through the gateway: many conversations at once, one tool call each.

Builds the real :class:`bot.app.App` — access policy, persisted inbox, gateway with its
per-session queues and ``agent.max_concurrent_turns`` slots, the agent loop, the tool
pipeline with a policy auto-approval, history and ``tool_calls`` rows on a real SQLite
file — with an in-process channel and a scripted provider that answers instantly. Each
conversation sends one message; the model asks for one no-op tool call, then answers.
All messages are delivered at once, as a burst of ``--conversations`` users would.

Prints turns per second (completed turns / wall time from the first delivery to the last
reply), envelope-to-reply latency (p50, p99: from ``deliver`` to the channel's ``send``; it
includes queueing behind the concurrency cap), the event loop thread's CPU per turn, the
whole process's CPU per turn (the loop plus SQLite's worker thread), SQLite round trips
(worker-thread trips) per turn, and the process's peak RSS. After the warm-up round the
bench settles the garbage collector as the daemon does after start-up
(:func:`bot.daemon.settle_memory`: one collection, then ``gc.freeze()``).

    python bench/throughput.py [--conversations 1000] [--max-concurrent-turns 32]
                               [--log-level warning] [--rounds 3]

Targets on a 2-core machine: at least 300 turns/s, peak RSS under 150 MB.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import cProfile
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench.machine import describe_machine, percentile
from bench.pipeline import NOOP
from bot.app import App
from bot.channel import (
    ApprovalCard,
    ChannelHealth,
    ChannelHost,
    HealthState,
    SentMessage,
)
from bot.config import Settings, parse_settings
from bot.daemon import settle_memory
from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from bot.logs import configure_logging
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

CHANNEL = ChannelRef(kind="console", alias="main")
FINAL = "done"


def decide(request: CompletionRequest) -> ProviderReply:
    """The instant model: a tool call for a new question, the answer after the result."""
    if request.messages and request.messages[-1].role == "tool":
        return reply(FINAL)
    return reply("", call("noop", {"n": 1}))


class BenchChannel:
    """An in-process adapter: records when each conversation's reply is sent."""

    ref = CHANNEL

    def __init__(self) -> None:
        self.host: ChannelHost | None = None
        self.connected = asyncio.Event()
        self.replied: dict[str, float] = {}
        self.all_replied = asyncio.Event()
        self.expected = 0

    @property
    def health(self) -> ChannelHealth:
        return ChannelHealth(state=HealthState.CONNECTED)

    async def run(self, host: ChannelHost) -> None:
        self.host = host
        self.connected.set()
        await asyncio.Event().wait()

    async def send(self, target: DeliveryTarget, text: str) -> Sequence[SentMessage]:
        if text != FINAL:
            return [SentMessage(target=target, message_id="progress")]
        self.replied[target.conversation_id] = time.perf_counter()
        if len(self.replied) >= self.expected:
            self.all_replied.set()
        return [SentMessage(target=target, message_id="r")]

    async def edit(self, message: SentMessage, text: str) -> None:
        return None

    async def react(self, target: DeliveryTarget, message_id: str, emoji: str) -> None:
        return None

    async def typing(self, target: DeliveryTarget) -> None:
        return None

    async def post_approval_card(self, target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        raise AssertionError("no approval is expected: the tool is auto-approved")

    async def update_approval_card(self, message: SentMessage, card: ApprovalCard) -> None:
        return None


def bench_settings(state_dir: Path, max_concurrent_turns: int) -> Settings:
    return parse_settings(
        {
            "state_dir": str(state_dir),
            "agent": {"max_concurrent_turns": max_concurrent_turns, "turn_timeout_s": 300.0},
            "channels": {"console": {"main": {}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "scripted",
                    "tool_mode": "native",
                }
            },
        },
        environ={},
    )


def envelope(round_no: int, n: int) -> IngressEnvelope:
    conversation = f"r{round_no}c{n}"
    return IngressEnvelope(
        channel=CHANNEL,
        message_id=f"m-{conversation}",
        conversation_id=conversation,
        sender=Sender(id=f"user{n}"),
        text="what does the no-op say?",
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


async def one_round(
    app: App, channel: BenchChannel, round_no: int, conversations: int
) -> dict[str, float]:
    assert channel.host is not None
    channel.replied.clear()
    channel.all_replied.clear()
    channel.expected = conversations
    envelopes = [envelope(round_no, n) for n in range(conversations)]
    delivered: dict[str, float] = {}
    trips0 = trips(app)
    cpu0, process0 = time.thread_time(), time.process_time()
    started = time.perf_counter()

    async def deliver(env: IngressEnvelope) -> None:
        delivered[env.conversation_id] = time.perf_counter()
        await channel.host.deliver(env)  # type: ignore[union-attr]

    await asyncio.gather(*(deliver(e) for e in envelopes))
    await asyncio.wait_for(channel.all_replied.wait(), timeout=600)
    finished = max(channel.replied.values())
    cpu, process = time.thread_time() - cpu0, time.process_time() - process0
    for _ in range(60_000):  # the last turns' "done" marks come after their replies
        if not app.gateway.active_turns:
            break
        await asyncio.sleep(0.001)
    round_trips = trips(app) - trips0
    latencies = sorted(channel.replied[c] - delivered[c] for c in delivered)
    wall = finished - started
    return {
        "turns": float(len(channel.replied)),
        "wall_s": wall,
        "turns_per_s": len(channel.replied) / wall,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "cpu_ms_per_turn": cpu / conversations * 1000,
        "process_cpu_ms_per_turn": process / conversations * 1000,
        "trips_per_turn": round_trips / conversations,
    }


def trips(app: App) -> int:
    """SQLite round trips so far (``Database.trips``; counted here on trees without it)."""
    db = app.store.db
    if not hasattr(db, "trips"):
        submit = db._submit
        db.trips = 0  # type: ignore[attr-defined]

        def counted(fn: Any) -> Any:
            db.trips += 1  # type: ignore[attr-defined]
            return submit(fn)

        db._submit = counted  # type: ignore[method-assign]
    return int(db.trips)


async def check_persisted(app: App, rounds: int, conversations: int, warmup: int) -> str:
    """What the store holds afterwards (every turn must be done and in history)."""
    counts = await app.store.inbox.counts()
    rows = await app.store.db.fetchone("SELECT COUNT(*) AS n FROM messages")
    calls = await app.store.db.fetchone("SELECT COUNT(*) AS n FROM tool_calls")
    expected = rounds * conversations + warmup
    messages = int(rows["n"]) if rows else 0
    tool_calls = int(calls["n"]) if calls else 0
    ok = counts.get("done") == expected and messages == 4 * expected and tool_calls == expected
    return (
        f"persisted: inbox {counts}, {messages} history messages, {tool_calls} tool_calls rows"
        f" ({'as expected' if ok else 'UNEXPECTED'})"
    )


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    print(
        f"{args.conversations} conversations at once, 1 tool call + 1 reply each, "
        f"max_concurrent_turns={args.max_concurrent_turns}, log level {args.log_level}"
    )
    print(f"RSS after imports: {rss_mb():.0f} MB")
    total = args.rounds * args.conversations + args.warmup
    provider = ScriptedProvider([decide] * (2 * total))
    channel = BenchChannel()
    with tempfile.TemporaryDirectory() as folder:
        settings = bench_settings(Path(folder), args.max_concurrent_turns)
        async with App(
            settings, provider=provider, channels={"console.main": channel}, tools=[NOOP]
        ) as app:
            await channel.connected.wait()
            if args.warmup:
                await one_round(app, channel, 0, args.warmup)
            settle_memory()  # as the daemon does after its warm-up
            results = []
            profiler = cProfile.Profile(time.thread_time) if args.profile else None
            for r in range(1, args.rounds + 1):
                if profiler is not None:
                    profiler.enable()
                figures = await one_round(app, channel, r, args.conversations)
                if profiler is not None:
                    profiler.disable()
                results.append(figures)
                print(
                    f"round {r}: {figures['turns_per_s']:7.1f} turns/s  "
                    f"({figures['turns']:.0f} turns in {figures['wall_s']:.2f} s)  "
                    f"deliver->reply p50={figures['p50_ms']:7.1f} ms  "
                    f"p99={figures['p99_ms']:7.1f} ms  "
                    f"loop CPU {figures['cpu_ms_per_turn']:.2f} ms/turn  "
                    f"process CPU {figures['process_cpu_ms_per_turn']:.2f} ms/turn  "
                    f"{figures['trips_per_turn']:.2f} trips/turn"
                )
            print(await check_persisted(app, args.rounds, args.conversations, args.warmup))
            if profiler is not None:
                profiler.dump_stats(args.profile)
                print(f"cProfile of the measured rounds written to {args.profile}")
    best = sorted(results, key=lambda f: f["turns_per_s"])
    median = best[len(best) // 2]
    print(
        f"median round: {median['turns_per_s']:.1f} turns/s, "
        f"p50={median['p50_ms']:.1f} ms, p99={median['p99_ms']:.1f} ms, "
        f"loop CPU {median['cpu_ms_per_turn']:.2f} ms/turn, "
        f"{median['trips_per_turn']:.2f} trips/turn; "
        f"peak RSS {rss_mb():.0f} MB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--max-concurrent-turns", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="bursts measured (median shown)")
    parser.add_argument("--warmup", type=int, default=100, help="conversations before measuring")
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=("debug", "info", "warning"),
        help="info is the daemon's default; its lines go to /dev/null",
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="write a cProfile (loop-thread CPU) of the rounds"
    )
    arguments = parser.parse_args()
    # JSON lines as the daemon writes them for journald, here to /dev/null (cost included)
    with open(os.devnull, "w") as devnull:
        configure_logging(arguments.log_level, "json", devnull)
        asyncio.run(main(arguments))
