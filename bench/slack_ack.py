"""How long Slack waits for its ack now that a message event is stored before it is acked.

The real daemon (``hatchway run``, a subprocess: real Gateway, inbox and turns on a real
SQLite file) connects in Socket Mode with the real ``slack-bolt`` / ``slack_sdk`` to the
loopback Slack fake; the fake and the OpenAI fake run in this process, so their work does
not compete with the daemon's event loop. ``--events`` DM ``message`` events (each from a
new user in a new DM, so each is a new conversation and a turn) are pushed over the socket
with at most ``--concurrency`` waiting for their ack at once (and, with ``--rate``, no more
than that many a second); every event is answered by the model, so the acks are measured
while the daemon hands events to the gateway, runs the turns they start, posts the answers
and writes the inbox, history and outbox. Without ``--rate`` the events come as one burst
(the acks outrun the turns); with a rate near the daemon's turn throughput, every ack waits
behind turns in progress.

Measured per event: from the fake writing the ``events_api`` envelope to the socket to the
fake reading its ack (both ``time.monotonic()`` in this process). The ack follows the
listener's write of the event to the store (``channels/slack/journal.py``). Prints
p50/p95/p99/max of the measured events (after ``--warmup``), the time until every event was
answered, the daemon's CPU, and the machine. Prints figures only, asserts nothing.

    python bench/slack_ack.py [--events 2000] [--concurrency 50] [--warmup 100] [--rate 250]

Target on a 2-core machine: p99 under 100 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import os
import signal
import tempfile
import time

from bench.e2e_harness import TimedOpenAI, wait_ready, write_config
from bench.e2e_slack import SlackBench
from bench.machine import describe_machine, percentile, process_cpu_s
from bench.smoke import parse_args
from tests.fakes.slack_server import event_callback, message_event
from tests.fakes.slack_server import person as profile
from tests.ops.daemon_process import start_daemon

ACK_WAIT_S = 30.0
ANSWER_WAIT_S = 600.0


def dm_event(n: int) -> dict[str, object]:
    sender, dm = f"UACK{n:06d}", f"DACK{n:06d}"
    text = f"question {n}"
    return event_callback(
        message_event(text, user=sender, channel=dm, ts=f"1800000000.{n:06d}"),
        event_id=f"EvACK{n:06d}",
    )


async def ack_times(
    slack: SlackBench, first: int, count: int, *, concurrency: int, rate: float
) -> list[float]:
    """Push events ``first`` .. ``first + count - 1``, at most ``concurrency`` unacked at
    once and, with ``rate``, no more than ``rate`` a second; each one's seconds from pushed
    to acked."""
    gate = asyncio.Semaphore(concurrency)
    times: list[float] = []
    start = time.monotonic()

    async def one(n: int) -> None:
        async with gate:
            pushed_at = time.monotonic()
            envelope_id = await slack.push("events_api", dm_event(n))
            await slack.wait_ack(envelope_id, wait_s=ACK_WAIT_S)
            times.append(slack.ack_at[envelope_id] - pushed_at)

    async with asyncio.TaskGroup() as group:
        for i, n in enumerate(range(first, first + count)):
            if rate:
                await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            group.create_task(one(n))
    return times


async def answered(slack: SlackBench, count: int) -> None:
    """Until ``count`` answers were posted."""
    await slack.wait_for("chat.postMessage", count=count, wait_s=ANSWER_WAIT_S)


async def main(args: argparse.Namespace) -> None:
    print(describe_machine(), flush=True)
    slack = SlackBench()
    total = args.warmup + args.events
    for n in range(total):
        slack.users[f"UACK{n:06d}"] = profile(f"UACK{n:06d}", f"Acker{n}")
    os.environ.update(slack.secrets)
    llm = TimedOpenAI()
    for n in range(total):
        llm.queue_text(f"answer {n}")
    async with slack, llm:
        with tempfile.TemporaryDirectory() as folder:
            config = write_config(Path(folder), slack, llm)
            async with start_daemon(config) as daemon:
                await wait_ready(daemon)
                await ack_times(slack, 0, args.warmup, concurrency=args.concurrency, rate=args.rate)
                await answered(slack, args.warmup)
                cpu_before = process_cpu_s(daemon.proc.pid)
                started = time.monotonic()
                samples = await ack_times(
                    slack, args.warmup, args.events, concurrency=args.concurrency, rate=args.rate
                )
                acked_s = time.monotonic() - started
                await answered(slack, total)
                answered_s = time.monotonic() - started
                cpu_s = process_cpu_s(daemon.proc.pid) - cpu_before
                daemon.signal(signal.SIGTERM)
                await daemon.wait_exit()
    report(args, sorted(s * 1000 for s in samples), acked_s, answered_s, cpu_s)


def report(
    args: argparse.Namespace, ordered: list[float], acked_s: float, answered_s: float, cpu_s: float
) -> None:
    n = len(ordered)
    print(
        f"slack socket mode, {n} DM message events (each a new conversation, each answered), "
        f"at most {args.concurrency} unacked at once"
        + (f", {args.rate:g} a second at most" if args.rate else "")
        + f", after {args.warmup} warm-up events"
    )
    print(
        "ack latency (envelope written to the socket -> ack read): "
        f"p50={percentile(ordered, 0.5):.1f} ms  p95={percentile(ordered, 0.95):.1f} ms  "
        f"p99={percentile(ordered, 0.99):.1f} ms  max={ordered[-1]:.1f} ms"
    )
    print(
        f"all acked in {acked_s:.1f} s ({n / acked_s:.0f} events/s); "
        f"all answered in {answered_s:.1f} s"
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"daemon CPU per event (all threads): {cpu_s * 1000 / n:.2f} ms; load average {load}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=2000, help="measured events")
    parser.add_argument("--concurrency", type=int, default=50, help="unacked events at most")
    parser.add_argument("--warmup", type=int, default=100, help="unmeasured events first")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="events pushed per second at most (default: as fast as the acks allow)",
    )
    asyncio.run(main(parse_args(parser, smoke={"events": 40, "warmup": 5, "concurrency": 10})))
