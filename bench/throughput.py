"""Turns per second through the gateway: many conversations at once, each a turn of the model.

Builds the real :class:`bot.app.App` — access policy, persisted inbox, gateway with its
per-session queues and ``agent.max_concurrent_turns`` slots, the agent loop, the tool
pipeline with the default approval policy, history and ``tool_calls`` rows on a real SQLite
file — with the tests' in-process channel (:class:`tests.fakes.channel.FakeChannel`, with a
delivery check as the platforms' channels have: :class:`CheckingChannel`). All
messages are delivered at once, as a burst of ``--conversations`` users would.

By default the model is what users run: the App builds its OpenAI-compatible provider from
the configuration (``bot/providers/openai_compat.py``, native tool mode, every built-in tool
offered to the model) and it talks over loopback HTTP to the OpenAI fake
(:mod:`tests.fakes.openai_server`), which runs in a process of its own
(:mod:`bench.model_server`) so that its CPU is not the daemon's. Each turn is one request
answered at once; with ``--tool``, the model first calls the built-in ``calculator`` and
answers after its result (two requests). ``--stream`` makes the provider stream (SSE).
``--scripted`` replaces the provider and the HTTP server with an in-process scripted model
and the tools with one no-op tool (the bench as it was before it spoke HTTP; its figure
with ``--tool`` is comparable with the earlier rounds in ``docs/performance.md``).
``--budgets`` prices the model and sets a budget of every kind (per user, per conversation,
for the agent and for the channel; daily and monthly; tokens and cost), none of which a
round comes near, so every turn runs every budget check. ``--rate-limits`` sets both rate
limits (per sender and per conversation) high enough that no message is refused, so every
message takes a token from two buckets and the buckets are written behind every second.
``--traces`` turns ``[telemetry]`` on with every turn sampled: the real OpenTelemetry SDK
builds each turn's spans and its batch processor hands them, on its own thread, to an
exporter that counts and drops them (the OTLP exporter's encoding and HTTP are left out).

Prints turns per second (completed turns / wall time from the first delivery to the last
reply), envelope-to-reply latency (p50, p99: from ``deliver`` to the channel's ``send``; it
includes queueing behind the concurrency cap), the event loop thread's CPU per turn, the
whole process's CPU per turn (the loop plus SQLite's worker thread), the model server's CPU
per turn, SQLite round trips (worker-thread trips) per turn, and the process's peak RSS.
After the warm-up round the bench settles the garbage collector as the daemon does after
start-up (:func:`bot.ops.daemon.settle_memory`: one collection, then ``gc.freeze()``).

    python bench/throughput.py [--tool] [--stream] [--scripted] [--budgets] [--rate-limits]
                               [--traces]
                               [--conversations 1000] [--max-concurrent-turns 32] [--rounds 3]
                               [--log-level warning] [--profile FILE]
    python bench/throughput.py --conversations 5000 [--tool]

Targets on a 2-core machine, 1,000 conversations over HTTP: at least 600 turns/s plain and
300 turns/s with ``--tool``; peak RSS under 100 MB at 5,000 conversations.
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
from bench.model_server import FINAL, ModelServer
from bench.pipeline import NOOP
from bench.smoke import parse_args
from bot.app import App
from bot.channel import SentMessage
from bot.config import Settings, parse_settings
from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from bot.ops.daemon import settle_memory
from bot.ops.logs import configure_logging
from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider, call, reply

CHANNEL = ChannelRef(kind="console", alias="main")


def decide(request: CompletionRequest) -> ProviderReply:
    """The scripted model with ``--tool``: a tool call for a new question, the answer after
    the result."""
    if request.messages and request.messages[-1].role == "tool":
        return reply(FINAL)
    return reply("", call("noop", {"n": 1}))


def answer_at_once(request: CompletionRequest) -> ProviderReply:
    """The scripted model without ``--tool``."""
    return reply(FINAL)


class CheckingChannel(FakeChannel):
    """The in-process channel with a delivery check (``bot.channel.DeliveryCheck``), as the
    Telegram, Slack and Discord channels have: a turn's answer then rides to the ledger
    with its history, as in the daemon. Recovery never asks it here (no crash)."""

    def __init__(self, ref: ChannelRef, *, on_send: Any = None) -> None:
        super().__init__(ref, on_send=on_send)
        self.delivery = self

    async def find_delivered(
        self, target: DeliveryTarget, *, key: str, text: str, after_message_id: str | None
    ) -> Sequence[SentMessage] | None:
        return []


class Replies:
    """When each conversation's reply was sent (fed by the shared fake channel's send hook)."""

    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.all_sent = asyncio.Event()
        self.expected = 0

    def on_send(self, target: DeliveryTarget, text: str) -> None:
        if text != FINAL:
            return  # a progress line
        self.at[target.conversation_id] = time.perf_counter()
        if len(self.at) >= self.expected:
            self.all_sent.set()

    def expect(self, conversations: int) -> None:
        self.at.clear()
        self.all_sent.clear()
        self.expected = conversations


#: Limits no round comes near (``--budgets``): every check runs, none stops a turn.
ROOMY = {
    "daily_tokens": 10**12,
    "monthly_tokens": 10**13,
    "daily_cost": 10.0**9,
    "monthly_cost": 10.0**10,
}


def budget_tables() -> dict[str, Any]:
    """``[pricing]`` and ``[budgets]`` for ``--budgets``."""
    return {
        "pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075}},
        "budgets": {
            "time_zone": "Europe/Berlin",
            "per_user": ROOMY,
            "per_conversation": ROOMY,
            "agents": {"default": ROOMY},
            "channels": {str(CHANNEL): ROOMY},
        },
    }


#: Rate limits no round comes near (``--rate-limits``): every message takes two tokens.
ROOMY_RATE = {"messages_per_minute": 10**5, "burst": 10**5}


def bench_settings(
    state_dir: Path,
    max_concurrent_turns: int,
    *,
    base_url: str,
    stream: bool,
    budgets: bool = False,
    rate_limits: bool = False,
    traces: bool = False,
) -> Settings:
    return parse_settings(
        {
            **(budget_tables() if budgets else {}),
            **(
                {"rate_limits": {"per_user": ROOMY_RATE, "per_conversation": ROOMY_RATE}}
                if rate_limits
                else {}
            ),
            **({"telemetry": {"enabled": True}} if traces else {}),
            "state_dir": str(state_dir),
            "agent": {"max_concurrent_turns": max_concurrent_turns, "turn_timeout_s": 300.0},
            "channels": {"console": {"main": {}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": base_url,
                    "model": "gpt-4o-mini",
                    "tool_mode": "native",
                    "stream": stream,
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
        text="what is six times seven?",
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


async def one_round(
    app: App,
    channel: FakeChannel,
    replies: Replies,
    round_no: int,
    conversations: int,
    model: ModelServer | None,
) -> dict[str, float]:
    host = channel.host
    assert host is not None
    channel.sent.clear()  # only the hook's figures are needed: memory stays flat
    channel.text_edits.clear()
    replies.expect(conversations)
    envelopes = [envelope(round_no, n) for n in range(conversations)]
    delivered: dict[str, float] = {}
    trips0 = trips(app)
    cpu0, process0 = time.thread_time(), time.process_time()
    model0 = model.cpu_s() if model is not None else 0.0
    started = time.perf_counter()

    async def deliver(env: IngressEnvelope) -> None:
        delivered[env.conversation_id] = time.perf_counter()
        await host.deliver(env)

    await asyncio.gather(*(deliver(e) for e in envelopes))
    await asyncio.wait_for(replies.all_sent.wait(), timeout=600)
    finished = max(replies.at.values())
    cpu, process = time.thread_time() - cpu0, time.process_time() - process0
    model_cpu = model.cpu_s() - model0 if model is not None else 0.0
    for _ in range(60_000):  # the last turns' "done" marks come after their replies
        if not app.gateway.active_turns:
            break
        await asyncio.sleep(0.001)
    round_trips = trips(app) - trips0
    assert not channel.posted, "no approval is expected: the tool is auto-approved"
    latencies = sorted(replies.at[c] - delivered[c] for c in delivered)
    wall = finished - started
    return {
        "turns": float(len(replies.at)),
        "wall_s": wall,
        "turns_per_s": len(replies.at) / wall,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "cpu_ms_per_turn": cpu / conversations * 1000,
        "process_cpu_ms_per_turn": process / conversations * 1000,
        "model_cpu_ms_per_turn": model_cpu / conversations * 1000,
        "trips_per_turn": round_trips / conversations,
    }


def trips(app: App) -> int:
    """SQLite round trips so far (``Database.trips``; counted here on trees without it)."""
    db: Any = app.store.db  # a private method is wrapped on older trees
    if not hasattr(db, "trips"):
        submit = db._submit
        db.trips = 0

        def counted(fn: Any) -> Any:
            db.trips += 1
            return submit(fn)

        db._submit = counted
    return int(db.trips)


async def check_persisted(app: App, turns: int, *, tool: bool) -> str:
    """What the store holds afterwards (every turn must be done and in history: the question
    and the answer, with ``--tool`` also the call and its result, and a ``tool_calls`` row;
    a ``usage`` row per model call)."""
    counts = await app.store.inbox.counts()
    rows = await app.store.db.fetchone("SELECT COUNT(*) AS n FROM messages")
    calls = await app.store.db.fetchone("SELECT COUNT(*) AS n FROM tool_calls")
    used = await app.store.db.fetchone("SELECT COUNT(*) AS n FROM usage")
    messages = int(rows["n"]) if rows else 0
    tool_calls = int(calls["n"]) if calls else 0
    usage = int(used["n"]) if used else 0
    ok = (
        counts.get("done") == turns
        and messages == (4 if tool else 2) * turns
        and tool_calls == (turns if tool else 0)
        and usage == (2 if tool else 1) * turns
    )
    return (
        f"persisted: inbox {counts}, {messages} history messages, {tool_calls} tool_calls rows,"
        f" {usage} usage rows ({'as expected' if ok else 'UNEXPECTED'})"
    )


def span_sink() -> Any:
    """An OpenTelemetry ``SpanExporter`` that counts the spans it is handed and drops them
    (``--traces``)."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class CountingExporter(SpanExporter):
        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.spans += len(spans)
            return SpanExportResult.SUCCESS

    return CountingExporter()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    model_kind = (
        "scripted in-process model, no-op tool"
        if args.scripted
        else f"OpenAI-compatible provider over HTTP{' (SSE)' if args.stream else ''}, "
        "built-in tools"
    )
    turn = "1 tool call + 1 answer" if args.tool else "1 answer"
    print(
        f"{args.conversations} conversations at once, {turn} each, {model_kind}, "
        f"max_concurrent_turns={args.max_concurrent_turns}, log level {args.log_level}"
        + (", budgets of every kind" if args.budgets else "")
        + (", rate limits per sender and conversation" if args.rate_limits else "")
        + (", traces on (every turn sampled, spans counted and dropped)" if args.traces else "")
    )
    print(f"RSS after imports: {rss_mb():.0f} MB")
    if args.scripted:
        await run(args, model=None, base_url="http://127.0.0.1:9/v1")
    else:
        async with ModelServer(tool=args.tool) as model:
            await run(args, model=model, base_url=model.base_url)


async def run(args: argparse.Namespace, *, model: ModelServer | None, base_url: str) -> None:
    total = args.rounds * args.conversations + args.warmup
    provider = None
    tools = None
    if model is None:
        provider = ScriptedProvider([decide if args.tool else answer_at_once] * (2 * total))
        tools = [NOOP]
    replies = Replies()
    channel = CheckingChannel(CHANNEL, on_send=replies.on_send)
    with tempfile.TemporaryDirectory() as folder:
        settings = bench_settings(
            Path(folder),
            args.max_concurrent_turns,
            base_url=base_url,
            stream=args.stream,
            budgets=args.budgets,
            rate_limits=args.rate_limits,
            traces=args.traces,
        )
        sink = span_sink() if args.traces else None
        async with App(
            settings,
            provider=provider,
            channels={"console.main": channel},
            tools=tools,
            span_exporter=sink,
        ) as app:
            await channel.running.wait()
            if args.warmup:
                await one_round(app, channel, replies, 0, args.warmup, model)
            settle_memory()  # as the daemon does after its warm-up
            results = []
            profiler = cProfile.Profile(time.thread_time) if args.profile else None
            for r in range(1, args.rounds + 1):
                if profiler is not None:
                    profiler.enable()
                figures = await one_round(app, channel, replies, r, args.conversations, model)
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
                    f"model server CPU {figures['model_cpu_ms_per_turn']:.2f} ms/turn  "
                    f"{figures['trips_per_turn']:.2f} trips/turn"
                )
            turns = args.rounds * args.conversations + args.warmup
            print(await check_persisted(app, turns, tool=args.tool))
        if sink is not None:  # the App's stop exported what was still batched
            print(f"spans exported: {sink.spans} ({sink.spans / turns:.1f} per turn)")
        if profiler is not None:
            profiler.dump_stats(args.profile)
            print(f"cProfile of the measured rounds written to {args.profile}")
    best = sorted(results, key=lambda f: f["turns_per_s"])
    median = best[len(best) // 2]
    print(
        f"median round: {median['turns_per_s']:.1f} turns/s, "
        f"p50={median['p50_ms']:.1f} ms, p99={median['p99_ms']:.1f} ms, "
        f"loop CPU {median['cpu_ms_per_turn']:.2f} ms/turn, "
        f"model server CPU {median['model_cpu_ms_per_turn']:.2f} ms/turn, "
        f"{median['trips_per_turn']:.2f} trips/turn; "
        f"peak RSS {rss_mb():.0f} MB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--conversations", type=int, default=1000, help="delivered at once (1000; also 5000)"
    )
    parser.add_argument(
        "--tool", action="store_true", help="each turn calls one read-only tool, then answers"
    )
    parser.add_argument("--stream", action="store_true", help="the provider streams (SSE)")
    parser.add_argument(
        "--budgets",
        action="store_true",
        help="price the model and set budgets of every kind (none reached): every check runs",
    )
    parser.add_argument(
        "--rate-limits",
        action="store_true",
        help="set both rate limits (none reached): every message takes two tokens",
    )
    parser.add_argument(
        "--scripted",
        action="store_true",
        help="an in-process scripted model and a no-op tool instead of the provider over HTTP",
    )
    parser.add_argument(
        "--traces",
        action="store_true",
        help="[telemetry] on, every turn sampled; spans counted and dropped by the exporter",
    )
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
    arguments = parse_args(parser, smoke={"conversations": 50, "rounds": 1, "warmup": 5})
    # JSON lines as the daemon writes them for journald, here to /dev/null (cost included)
    with open(os.devnull, "w") as devnull:
        configure_logging(arguments.log_level, "json", devnull)
        asyncio.run(main(arguments))
