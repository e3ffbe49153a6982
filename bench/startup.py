"""How long hatchway takes to start: imports, ``hatchway --help``, and process start to READY.

* import time: ``python -X importtime -c "import MODULE"`` for ``bot`` (the package),
  ``bot.app`` (the composition root) and ``bot.daemon`` (what ``hatchway run`` loads), the
  cumulative figure of the module's own line (median of ``--repeat`` fresh interpreters);
* ``python -m bot.cli --help`` (what ``hatchway --help`` runs): wall time of the whole
  command, interpreter start included;
* READY: from spawning ``hatchway run`` to its ``READY=1`` datagram on a fake
  ``NOTIFY_SOCKET``, with Telegram, Slack (socket mode) and Discord configured against the
  loopback fakes (the daemon sends READY once every channel reports connected) and the
  OpenAI-compatible provider against the loopback LLM fake. discord.py holds its READY
  until ``guild_ready_timeout_s`` (2 s by default) has passed without a new guild, so READY
  is measured twice: with the default and with 0.1 s.

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

from bench.machine import describe_machine
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


async def ready_s(config: Path) -> tuple[float, str]:
    """Seconds from spawning ``hatchway run`` to READY=1, and the STATUS sent with it."""
    started = time.monotonic()
    async with start_daemon(config) as daemon:
        ready = await daemon.wait_notify("READY", "1")
        elapsed = time.monotonic() - started
        status = ready.get("STATUS", "")
        if not status:
            statuses = [m["STATUS"] for m in daemon.notify.messages if "STATUS" in m]
            status = statuses[-1] if statuses else ""
        daemon.signal(signal.SIGTERM)
        await daemon.wait_exit()
    return elapsed, status


async def measure_ready(repeat: int, guild_wait: str) -> tuple[list[float], str]:
    os.environ.update(SECRETS)
    async with (
        FakeTelegram(TELEGRAM_TOKEN) as tg,
        FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack,
        FakeDiscord() as discord,
        OpenAIFake(model="gpt-4o-mini") as llm,
    ):
        discord.add_guild(channels={"100": "general"})
        samples: list[float] = []
        status = ""
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as folder:
                config = write_config(Path(folder), tg, slack, discord, llm.base_url, guild_wait)
                elapsed, status = await ready_s(config)
                samples.append(elapsed)
    return samples, status


def summary(samples: list[float], unit: str = "ms") -> str:
    return (
        f"median={statistics.median(samples):7.1f} {unit}  min={min(samples):7.1f} {unit}  "
        f"max={max(samples):7.1f} {unit}  (n={len(samples)})"
    )


def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    for module in ("bot", "bot.app", "bot.daemon"):
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
        samples, status = asyncio.run(measure_ready(args.repeat, guild_wait))
        print(f"start -> READY=1, {label}: {summary([s * 1000 for s in samples])}; {status}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each measurement")
    main(parser.parse_args())
