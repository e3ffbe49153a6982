"""The end-to-end latency harness the ``bench/e2e_*.py`` scripts share.

Each script supplies a :class:`BenchPlatform`: a loopback fake of one chat platform that
knows its ``[channels.KIND.main]`` table and how to play one exchange (push a user's message,
wait for the answer, return when the fake handed the message out and when it received the
answer). The harness does the rest, the same way for every platform: it starts the loopback
OpenAI fake, writes ``hatchway.toml``, runs the real daemon (``hatchway run`` as a subprocess
with a fake ``NOTIFY_SOCKET``, see :mod:`tests.ops.daemon_process`) until ``READY=1``, plays
``--warmup`` then ``--turns`` exchanges one at a time, and prints the machine and the
percentiles of hatchway's share of each turn::

    hatchway = replied - delivered - time spent inside the fake LLM's handler

It also prints the daemon's CPU time per measured turn (all its threads, from ``/proc``):
on a shared 2-core machine the wall-clock figures move with the load, the CPU much less.

Both fakes run in the bench process, so their work does not compete with the daemon's event
loop. By default every turn comes from a new user in a new DM (so every turn starts a
conversation); ``--same-chat`` keeps every turn in one DM, so the history sent to the model
grows. ``--tool`` makes each turn first call one auto-approved tool (``current_time``), so the
model is asked twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from aiohttp import web

from bench.machine import describe_machine, percentile, process_cpu_s
from bench.smoke import parse_args
from tests.fakes.openai_server import OpenAIFake
from tests.ops.daemon_process import DaemonProcess, start_daemon

ANSWER = "Bench answer"
MODEL = "gpt-4o-mini"
REPLY_WAIT_S = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """When one user message left the platform fake and when its answer came back
    (``time.monotonic()`` seconds, both taken in the bench process)."""

    delivered: float
    replied: float


class BenchPlatform(Protocol):
    """One platform's loopback fake, as the harness drives it.

    Entered with ``async with`` before the daemon starts and left after it exited. The
    daemon's token environment variables are taken from ``secrets``.
    """

    kind: ClassVar[str]  # the channel kind in hatchway.toml, printed with the figures
    measured: ClassVar[str]  # what is timed, e.g. "update delivered -> answer sent"
    secrets: ClassVar[Mapping[str, str]]

    async def __aenter__(self) -> object: ...

    async def __aexit__(self, *exc: object) -> None: ...

    def channel_settings(self) -> Mapping[str, str | float]:
        """The ``[channels.KIND.main]`` keys that point the daemon at this fake (the harness
        adds ``allowed_users = ["*"]``)."""
        ...

    async def exchange(self, *, person: int, message_no: int, text: str, answer: str) -> Exchange:
        """Push ``text`` from user ``person`` in that user's DM (``message_no`` is unique per
        message) and wait until the bot posts exactly ``answer`` there."""
        ...


class TimedOpenAI(OpenAIFake):
    """The OpenAI fake, adding up the time spent in its handler.

    The one bench that overrides a fake's private method: the fake has no public way to time
    its handler. ``.ci/run`` type-checks ``bench/``, so a change of its signature fails there
    rather than in a run."""

    def __init__(self) -> None:
        super().__init__(model=MODEL)
        self.busy_s = 0.0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        try:
            return await super()._handle(request)
        finally:
            self.busy_s += time.monotonic() - started


def write_config(folder: Path, platform: BenchPlatform, llm: OpenAIFake) -> Path:
    channel = {**platform.channel_settings(), "allowed_users": ["*"]}
    # JSON strings, numbers and lists of strings are TOML values too.
    channel_keys = "\n".join(f"{key} = {json.dumps(value)}" for key, value in channel.items())
    path = folder / "hatchway.toml"
    path.write_text(
        f"""
[agent]
system_prompt = "bench"

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "{MODEL}"
max_retries = 0

[channels.{platform.kind}.main]
{channel_keys}

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


async def one_turn(
    platform: BenchPlatform, llm: TimedOpenAI, n: int, args: argparse.Namespace
) -> float:
    """hatchway's share of turn ``n``, in seconds."""
    answer = f"{ANSWER} {n}"
    if args.tool:
        llm.queue_tool_calls([("current_time", {})])
    llm.queue_text(answer)
    busy_before = llm.busy_s
    async with asyncio.timeout(REPLY_WAIT_S):
        times = await platform.exchange(
            person=0 if args.same_chat else 1 + n,
            message_no=n,
            text=f"question {n}",
            answer=answer,
        )
    return times.replied - times.delivered - (llm.busy_s - busy_before)


async def wait_ready(daemon: DaemonProcess) -> None:
    """Until the daemon sends ``READY=1``; raises at once, with its last log events, if it
    exits first (rather than waiting out the READY timeout)."""

    async def exits_early() -> None:
        code = await daemon.proc.wait()
        tail = "\n".join(json.dumps(event) for event in daemon.events[-20:])
        raise RuntimeError(f"the daemon exited ({code}) before READY; last events:\n{tail}")

    async with asyncio.TaskGroup() as group:
        watch = group.create_task(exits_early())
        await daemon.wait_notify("READY", "1")
        watch.cancel()


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """hatchway's share of each measured turn, and the daemon's CPU over those turns (all
    its threads; seconds). The CPU figure moves much less with the machine's load."""

    samples: list[float]
    daemon_cpu_s: float


async def measure(platform: BenchPlatform, args: argparse.Namespace) -> Measurement:
    """Run the daemon against ``platform`` and time ``args.turns`` turns after the warm-up."""
    os.environ.update(platform.secrets)
    llm = TimedOpenAI()
    async with platform, llm:
        with tempfile.TemporaryDirectory() as folder:
            config = write_config(Path(folder), platform, llm)
            async with start_daemon(config) as daemon:
                await wait_ready(daemon)
                for n in range(args.warmup):
                    await one_turn(platform, llm, args.turns + n, args)
                cpu_before = process_cpu_s(daemon.proc.pid)
                samples = [await one_turn(platform, llm, n, args) for n in range(args.turns)]
                cpu_s = process_cpu_s(daemon.proc.pid) - cpu_before
                daemon.signal(signal.SIGTERM)
                await daemon.wait_exit()
    return Measurement(samples=samples, daemon_cpu_s=cpu_s)


def report(platform: BenchPlatform, args: argparse.Namespace, measured: Measurement) -> None:
    ordered = sorted(s * 1000 for s in measured.samples)
    kind = "1 tool call + answer (2 LLM requests)" if args.tool else "plain answer (1 LLM request)"
    chats = "all in one DM (history grows)" if args.same_chat else "each in a new DM"
    print(f"{platform.kind} DM turns, one at a time, {kind}, {chats}: n={len(ordered)}")
    print(
        f"hatchway's latency ({platform.measured}, minus the fake LLM's time): "
        f"p50={percentile(ordered, 0.5):.1f} ms  p99={percentile(ordered, 0.99):.1f} ms  "
        f"min={ordered[0]:.1f} ms  max={ordered[-1]:.1f} ms"
    )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"daemon CPU per turn (all threads): {measured.daemon_cpu_s * 1000 / len(ordered):.1f} ms"
        f"; load average at the end {load}"
    )


async def _main(make_platform: Callable[[], BenchPlatform], args: argparse.Namespace) -> None:
    print(describe_machine(), flush=True)
    platform = make_platform()  # inside the event loop: the fakes make asyncio primitives
    report(platform, args, await measure(platform, args))


def run_bench(doc: str, make_platform: Callable[[], BenchPlatform]) -> None:
    """The command line of one ``bench/e2e_*.py`` script (``doc`` is its docstring)."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=200, help="measured turns (default 200)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured turns first")
    parser.add_argument("--tool", action="store_true", help="one tool call per turn")
    parser.add_argument(
        "--same-chat",
        action="store_true",
        help="every turn in the same DM, so the history sent to the model grows",
    )
    args = parse_args(parser, smoke={"turns": 5, "warmup": 1})
    asyncio.run(_main(make_platform, args))
