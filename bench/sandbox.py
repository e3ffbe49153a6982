"""What the ``shell`` sandbox adds to a call: bubblewrap against no sandbox, per command.

Each sample is one call of the real ``shell`` tool's handler (deny list, workspace folder,
environment, spawn, output capture, clean-up of the process group), timed from the call to
its result, for three builds of the tool over the same daemon layout (a state directory with
a database, a per-conversation workspace):

* ``bwrap``: the sandbox (``tools.shell.sandbox = "bwrap"``) with the default limits;
* ``none``: no sandbox, the same limits (``prlimit`` before ``/bin/sh``);
* ``bare``: no sandbox and no limits (the call as it was before either existed).

The builds take turns within each round, in an order that rotates every round, so a busy
moment of the machine falls on all of them alike. Printed per command (``true``, ``echo``):
the median, p90 and mean of each build, and the median difference bwrap − none (the
sandbox's own cost) and none − bare (the limits' cost).

    python bench/sandbox.py [--rounds 200] [--warmup 10]

Target: bwrap − none under 20 ms median on the project's 2-core machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import shutil
import sqlite3
import statistics
import tempfile
import time

from bench.machine import describe_machine, percentile
from bench.smoke import parse_args
from bot.config import ShellToolConfig, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.ops.logs import configure_logging
from bot.tools.builtin.sandbox import Confinement
from bot.tools.builtin.sandbox_probe import bwrap_status
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolSpec
from bot.turn import TurnIdentity

COMMANDS = {"true": "true", "echo": "echo hello from the sandbox bench"}
UNLIMITED = {
    "max_cpu_s": 0,
    "max_memory_mb": 0,
    "max_open_files": 0,
    "max_processes": 0,
    "max_file_mb": 0,
}


def context() -> ToolContext:
    channel = ChannelRef(kind="slack", alias="bench")
    envelope = IngressEnvelope(
        channel=channel,
        message_id="m1",
        conversation_id="C-BENCH",
        sender=Sender(id="U_BENCH"),
        text="bench",
        reply_target=DeliveryTarget(channel=channel, conversation_id="C-BENCH"),
    )
    turn = TurnIdentity(turn_id="t1", session_key="slack.bench:C-BENCH", envelope=envelope)
    return ToolContext(turn=turn)


def builds(base: Path) -> dict[str, ToolSpec]:
    """The three ``shell`` tools over one daemon layout under ``base``."""
    state = base / "state"
    root = state / "workspace"
    root.mkdir(parents=True)
    with sqlite3.connect(state / "hatchway.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    settings = parse_settings({"state_dir": str(state)}, environ={}, require_provider=False)
    confinement = Confinement.of(settings)
    workspace = Workspace(root=root, scope="conversation")
    configs = {
        "bwrap": {"sandbox": "bwrap"},
        "none": {"sandbox": "none"},
        "bare": {"sandbox": "none", **UNLIMITED},
    }
    return {
        name: shell_tool(workspace, ShellToolConfig.model_validate(cfg), confinement=confinement)
        for name, cfg in configs.items()
    }


async def call(spec: ToolSpec, command: str, ctx: ToolContext) -> float:
    assert spec.handler is not None
    started = time.perf_counter()
    result = await spec.handler({"command": command}, ctx)
    elapsed = time.perf_counter() - started
    text = result if isinstance(result, str) else result.text
    if not text.startswith("exit code 0"):
        raise SystemExit(f"{command!r} failed: {text}")
    return elapsed


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


async def measure(specs: dict[str, ToolSpec], rounds: int, warmup: int) -> None:
    ctx = context()
    names = list(specs)
    for label, command in COMMANDS.items():
        samples: dict[str, list[float]] = {name: [] for name in names}
        for index in range(warmup + rounds):
            order = names[index % len(names) :] + names[: index % len(names)]
            for name in order:
                elapsed = await call(specs[name], command, ctx)
                if index >= warmup:
                    samples[name].append(elapsed)
        print(f"\n{label!r} ({rounds} calls each, interleaved):")
        print("  build   median      p90     mean   (ms)")
        medians = {}
        for name in names:
            ordered = sorted(samples[name])
            medians[name] = statistics.median(ordered)
            mean = statistics.fmean(ordered)
            print(f"  {name:6} {ms(medians[name])} {ms(percentile(ordered, 0.9))} {ms(mean)}")
        sandbox = medians["bwrap"] - medians["none"]
        limits = medians["none"] - medians["bare"]
        print(f"  sandbox cost (bwrap − none, medians): {ms(sandbox).strip()} ms")
        print(f"  limits cost (none − bare, medians):   {ms(limits).strip()} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parse_args(parser, smoke={"rounds": 5, "warmup": 1})
    configure_logging("warning", "console")
    status = bwrap_status()
    if not status.works:
        raise SystemExit(f"bubblewrap cannot run here: {status.problem}")
    print(describe_machine())
    print(f"{status.version} ({status.program}); prlimit {shutil.which('prlimit')}")
    base = Path(tempfile.mkdtemp(prefix="hatchway-bench-sandbox-", dir="/var/tmp"))
    try:
        asyncio.run(measure(builds(base), args.rounds, args.warmup))
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
