"""How long hatchway takes to start: imports, ``hatchway --help``, and process start to READY.

* import time: ``python -X importtime -c "import MODULE"`` for ``bot`` (the package),
  ``bot.app`` (the composition root) and ``bot.ops.daemon`` (what ``hatchway run`` loads), the
  cumulative figure of the module's own line (median of ``--repeat`` fresh interpreters);
* ``python -m bot.cli --help`` (what ``hatchway --help`` runs): wall time of the whole
  command, interpreter start included;
* READY: from spawning ``hatchway run`` to its ``READY=1`` datagram on a fake
  ``NOTIFY_SOCKET``, with Telegram, Slack (socket mode) and Discord configured against the
  loopback fakes (the daemon sends READY once every channel reports connected) and the
  OpenAI-compatible provider against the loopback LLM fake. discord.py holds its READY
  until ``guild_ready_timeout_s`` (2 s by default) has passed without a new guild, so READY
  is measured twice: with the default and with 0.1 s. Printed with it: the daemon's own CPU
  time at READY (``/proc``; moves much less than wall time on a busy machine) and the time
  until the provider's SDK is imported and its client built (``provider_built``), which the
  daemon does right after READY (``bot/providers/deferred.py``).

The project's modules are byte-compiled first, as ``pip install`` does (see
:func:`compile_bytecode`).

Also prints which platform and provider SDKs ``import bot``, ``import bot.app`` and
``hatchway --help`` load (none is the aim: each is imported when a channel or provider of
its kind is built).

    python bench/startup.py [--repeat 5]

Targets on a 2-core machine: READY under 2 s; importing ``bot`` under 300 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass

from bench.machine import describe_machine, process_cpu_s
from bench.smoke import parse_args
from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram
from tests.ops.daemon_process import ROOT, start_daemon

TELEGRAM_TOKEN = "717171:AAstartup-token-for-the-fake-bot-api-abcde"
SLACK_BOT_TOKEN = "xoxb-7777-8888-startup-bot-token"
SLACK_APP_TOKEN = "xapp-1-A0007-startup-app-token"
SECRETS = {
    "BENCH_TELEGRAM_TOKEN": TELEGRAM_TOKEN,
    "BENCH_SLACK_BOT_TOKEN": SLACK_BOT_TOKEN,
    "BENCH_SLACK_APP_TOKEN": SLACK_APP_TOKEN,
    "BENCH_DISCORD_TOKEN": DISCORD_TOKEN,
}
SDKS = ("openai", "anthropic", "telegram", "slack_sdk", "slack_bolt", "discord", "mcp")


def import_ms(module: str) -> float:
    """Cumulative import time of ``module`` in a fresh interpreter, in ms."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    for line in reversed(done.stderr.splitlines()):
        fields = line.split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return int(fields[1]) / 1000
    raise RuntimeError(f"no importtime line for {module}")


def sdks_loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m in {SDKS})))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.split()


def help_ms() -> float:
    """``python -m bot.cli --help`` from the project root (the ``hatchway`` script runs the
    same code, but from wherever the package is installed)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bot.cli", "--help"], capture_output=True, check=True, cwd=ROOT
    )
    return (time.perf_counter() - started) * 1000


def write_config(
    folder: Path,
    tg: FakeTelegram,
    slack: FakeSlack,
    discord: FakeDiscord,
    llm: str,
    guild_wait: str,
) -> Path:
    path = folder / "hatchway.toml"
    path.write_text(
        f"""
[agent]
system_prompt = "bench"

[providers.default]
kind = "openai"
base_url = "{llm}"
model = "gpt-4o-mini"

[channels.telegram.main]
token_env = "BENCH_TELEGRAM_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
allowed_users = ["*"]

[channels.slack.main]
bot_token_env = "BENCH_SLACK_BOT_TOKEN"
app_token_env = "BENCH_SLACK_APP_TOKEN"
api_base_url = "{slack.api_base_url}"
allowed_users = ["*"]

[channels.discord.main]
token_env = "BENCH_DISCORD_TOKEN"
api_base_url = "{discord.base_url}"
gateway_url = "{discord.gateway_url}"
allowed_users = ["*"]
{guild_wait}

[server]
enabled = true
host = "127.0.0.1"
port = 0

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    ready_s: float  # spawn → READY=1
    ready_cpu_s: float  # the daemon's CPU time at READY (less sensitive to a busy machine)
    provider_s: float  # spawn → the provider's SDK imported and its client built
    status: str


async def measure_start(config: Path) -> Start:
    """One spawn of ``hatchway run`` until READY=1 and the provider warmed up after it."""
    started = time.monotonic()
    async with start_daemon(config) as daemon:
        ready = await daemon.wait_notify("READY", "1")
        ready_s = time.monotonic() - started
        ready_cpu_s = process_cpu_s(daemon.proc.pid)
        status = ready.get("STATUS", "")
        if not status:
            statuses = [m["STATUS"] for m in daemon.notify.messages if "STATUS" in m]
            status = statuses[-1] if statuses else ""
        await daemon.wait_event("provider_built")
        provider_s = time.monotonic() - started
        daemon.signal(signal.SIGTERM)
        await daemon.wait_exit()
    return Start(ready_s=ready_s, ready_cpu_s=ready_cpu_s, provider_s=provider_s, status=status)


async def measure_ready(repeat: int, guild_wait: str) -> list[Start]:
    os.environ.update(SECRETS)
    async with (
        FakeTelegram(TELEGRAM_TOKEN) as tg,
        FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack,
        FakeDiscord() as discord,
        OpenAIFake(model="gpt-4o-mini") as llm,
    ):
        discord.add_guild(channels={"100": "general"})
        samples: list[Start] = []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as folder:
                config = write_config(Path(folder), tg, slack, discord, llm.base_url, guild_wait)
                samples.append(await measure_start(config))
    return samples


def summary(samples: list[float], unit: str = "ms") -> str:
    return (
        f"median={statistics.median(samples):7.1f} {unit}  min={min(samples):7.1f} {unit}  "
        f"max={max(samples):7.1f} {unit}  (n={len(samples)})"
    )


def compile_bytecode() -> None:
    """Write ``.pyc`` files for ``bot`` and ``channels``, as ``pip install`` does for an
    installed package. (This development machine sets ``PYTHONDONTWRITEBYTECODE=1``, so
    without this every spawn would compile the project's ~140 modules from source, about
    0.4 s that no installed daemon pays.)"""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "bot", "channels"],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    compile_bytecode()
    for module in ("bot", "bot.app", "bot.ops.daemon"):
        samples = [import_ms(module) for _ in range(args.repeat)]
        print(f"import {module:<12} {summary(samples)}")
    print(f"bot.cli --help      {summary([help_ms() for _ in range(args.repeat)])}")
    for label, code in (
        ("import bot", "import bot"),
        ("import bot.app", "import bot.app"),
        ("hatchway --help", "import bot.cli\nbot.cli.build_parser()"),
    ):
        print(f"SDKs loaded by {label}: {', '.join(sdks_loaded(code)) or 'none'}")
    for label, guild_wait in (
        ("default config", ""),
        ("guild_ready_timeout_s=0.1", "guild_ready_timeout_s = 0.1"),
    ):
        starts = asyncio.run(measure_ready(args.repeat, guild_wait))
        print(f"start -> READY=1, {label}: {summary([s.ready_s * 1000 for s in starts])}")
        print(f"  daemon CPU at READY:   {summary([s.ready_cpu_s * 1000 for s in starts])}")
        print(f"  start -> provider built: {summary([s.provider_s * 1000 for s in starts])}")
        print(f"  status: {starts[-1].status}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement")
    main(parse_args(parser, smoke={"repeat": 1}))
