"""Soak run: many conversations over the loopback platform fakes, nothing lost or repeated.

Starts the Telegram, Slack and Discord fakes on 127.0.0.1, builds the whole App (gateway,
agent loop, SQLite store in a temporary directory) with an echoing model, and spreads
``--conversations`` conversations over the three platforms for ``--seconds``. Every message
carries a unique tag and the model echoes it, so each outbound message is attributed to
exactly one inbound message. Every ``--mcp-every``-th turn (default 5; 0 for none) the model
first calls the ``echo`` tool of a real stdio MCP server (``tests/mcp/demo_server.py``, started
by the App like any configured server) and answers with what it echoed. At the end it prints
the counts (sent, answered, lost, duplicated), the MCP calls by outcome, reply latency
percentiles, turn throughput, the resident memory sampled once a second and its slope per
10k turns (a least-squares fit of RSS against answered turns, over the samples taken after
the warm-up: the first round, in which every conversation is new, or the first ``--warmup``
share of the turns if that is more), then a verdict; the exit status is 0 only when nothing was
lost or duplicated, every MCP call succeeded and memory stayed within
``--max-rss-growth-mb``.

    python bench/soak.py                    # 500 conversations over 60 s
    python bench/soak.py --seconds 300 --messages 5
    python bench/soak.py --mcp-every 1      # an MCP call in every turn

Traffic goes only to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

from bench.machine import percentile  # noqa: E402
from bench.smoke import parse_args  # noqa: E402
from bot.app import App  # noqa: E402
from bot.config import parse_settings  # noqa: E402
from bot.ops.logs import configure_logging  # noqa: E402
from bot.providers.base import (  # noqa: E402
    CompletionRequest,
    ProviderReply,
    StreamSink,
    ToolCallRequest,
)
from tests.fakes.discord_payloads import message_payload, user_payload  # noqa: E402
from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN  # noqa: E402
from tests.fakes.discord_server import FakeDiscord  # noqa: E402
from tests.fakes.slack_server import FakeSlack, event_callback, message_event  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user  # noqa: E402

TELEGRAM_TOKEN = "717171:AAsoak-token-for-the-fake-bot-api-abcdefghij"
SLACK_BOT = "xoxb-9999-8888-soak-bot-token"
SLACK_APP = "xapp-1-A0009-soak-app-token"
DISCORD_BOT_ID = "900000000000000001"
TAG = re.compile(r"\bt(\d+)x\b")
DEMO_SERVER = ROOT / "tests" / "mcp" / "demo_server.py"
MCP_TOOL = "soak__echo"


class EchoModel:
    """A real Provider: answers every turn with the tag of the newest user message; when the
    tag is a multiple of ``mcp_every``, it first calls the MCP echo tool with the tag and
    answers with the tool's result."""

    name = "echo"

    def __init__(self, mcp_every: int) -> None:
        self.mcp_every = mcp_every

    async def complete(
        self, request: CompletionRequest, *, stream: StreamSink | None = None
    ) -> ProviderReply:
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "tool":
            found = TAG.search(str(last.content))
            return ProviderReply(text=f"echo {found.group(0) if found else 'none'}", tool_calls=())
        text = next((str(m.content) for m in reversed(request.messages) if m.role == "user"), "")
        found = TAG.search(text)
        if found and self.mcp_every and int(found.group(1)) % self.mcp_every == 0:
            arguments = json.dumps({"text": f"via mcp {found.group(0)}"})
            tool_call = ToolCallRequest(id=f"c{found.group(1)}", name=MCP_TOOL, arguments=arguments)
            return ProviderReply(text="", tool_calls=(tool_call,))
        return ProviderReply(text=f"echo {found.group(0) if found else 'none'}", tool_calls=())

    async def aclose(self) -> None:
        return None


@dataclass
class Ledger:
    sent_at: dict[int, float] = field(default_factory=dict)
    answered: Counter[int] = field(default_factory=Counter)
    latency_s: list[float] = field(default_factory=list)

    def record(self, text: str) -> None:
        for match in TAG.finditer(text):
            tag = int(match.group(1))
            self.answered[tag] += 1
            if self.answered[tag] == 1 and tag in self.sent_at:
                self.latency_s.append(time.monotonic() - self.sent_at[tag])


def rss_slope_per_10k(samples: list[tuple[int, float]], warmup_turns: int) -> float | None:
    """MB of RSS per 10k answered turns: the least-squares slope of RSS against the answered
    count, over the samples taken after ``warmup_turns`` were answered."""
    points = [(turns, rss) for turns, rss in samples if turns >= warmup_turns]
    if len({turns for turns, _ in points}) < 3:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx * 10_000


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def watch(
    calls: Callable[[], list[Any]], text_of: Callable[[Any], str], ledger: Ledger
) -> None:
    """Feed every new outbound call of one fake into the ledger."""
    seen = 0
    while True:
        current = calls()
        for call in current[seen:]:
            ledger.record(text_of(call))
        seen = len(current)
        await asyncio.sleep(0.05)


async def soak(args: argparse.Namespace) -> int:
    configure_logging("warning", "console", stream=sys.stderr)
    os.environ["HATCHWAY_TELEGRAM_TOKEN"] = TELEGRAM_TOKEN
    os.environ["HATCHWAY_SLACK_BOT_TOKEN"] = SLACK_BOT
    os.environ["HATCHWAY_SLACK_APP_TOKEN"] = SLACK_APP
    os.environ["HATCHWAY_DISCORD_TOKEN"] = DISCORD_TOKEN
    ledger = Ledger()
    rss: list[float] = []
    # (answered turns, RSS MB), once a second
    rss_by_turns: list[tuple[int, float]] = []
    platforms = [p for p in ("telegram", "slack", "discord") if p not in args.skip]
    n_discord_channels = max(1, args.conversations // len(platforms))
    discord_channels = [str(810000000000000000 + i) for i in range(n_discord_channels)]
    with tempfile.TemporaryDirectory(prefix="hatchway-soak-") as state:
        async with (
            FakeTelegram(TELEGRAM_TOKEN) as tg,
            FakeSlack(SLACK_BOT, SLACK_APP) as slack,
            FakeDiscord(bot_id=DISCORD_BOT_ID) as discord_fake,
        ):
            discord_fake.add_guild(
                channels={c: f"room-{i}" for i, c in enumerate(discord_channels)}
            )
            common = {"allowed_users": ["*"], "dm_policy": "open", "require_mention": True}
            channels: dict[str, Any] = {}
            if "telegram" in platforms:
                channels["telegram"] = {
                    "main": {
                        **common,
                        "api_base_url": tg.base_url,
                        "file_base_url": tg.file_base_url,
                        "poll_timeout_s": 1,
                    }
                }
            if "slack" in platforms:
                channels["slack"] = {"main": {**common, "api_base_url": slack.api_base_url}}
            if "discord" in platforms:
                channels["discord"] = {
                    "main": {
                        **common,
                        "api_base_url": discord_fake.base_url,
                        "gateway_url": discord_fake.gateway_url,
                        "guild_ready_timeout_s": 0.05,
                    }
                }
            mcp: dict[str, Any] = {}
            if args.mcp_every:
                server = {"command": [sys.executable, str(DEMO_SERVER)], "requires_approval": False}
                mcp = {"servers": {"soak": server}}
            settings = parse_settings(
                {
                    "state_dir": state,
                    "agent": {"max_concurrent_turns": args.concurrency},
                    "channels": channels,
                    "mcp": mcp,
                },
                environ={},
                require_provider=False,
            )
            app = App(settings, provider=EchoModel(args.mcp_every), tools=[])
            bot_user = user_payload(DISCORD_BOT_ID, "hatchway", bot=True)
            async with app, asyncio.TaskGroup() as group:
                async with asyncio.timeout(60):
                    while not app.ready():  # noqa: ASYNC110 - health has no change event
                        await asyncio.sleep(0.05)
                    if app.mcp is not None:
                        await app.mcp.wait_ready()
                watchers = [
                    group.create_task(
                        watch(
                            lambda: tg.calls_of("sendMessage"),
                            lambda c: str(c.params.get("text", "")),
                            ledger,
                        )
                    ),
                    group.create_task(
                        watch(
                            lambda: slack.calls_of("chat.postMessage"),
                            lambda c: str(c.params.get("text", "")),
                            ledger,
                        )
                    ),
                    group.create_task(
                        watch(
                            lambda: discord_fake.calls_to("POST", r"/channels/\d+/messages"),
                            lambda c: str((c.body or {}).get("content", "")),
                            ledger,
                        )
                    ),
                ]

                async def sample() -> None:
                    while True:
                        rss.append(rss_mb())
                        rss_by_turns.append((len(ledger.answered), rss[-1]))
                        await asyncio.sleep(1.0)

                sampler = group.create_task(sample())
                start = time.monotonic()
                total = args.conversations * args.messages
                interval = args.seconds / total
                tag = 0
                for round_no in range(args.messages):
                    for conv in range(args.conversations):
                        tag += 1
                        platform = platforms[conv % len(platforms)]
                        text = f"soak t{tag}x"
                        ledger.sent_at[tag] = time.monotonic()
                        if platform == "telegram":
                            uid = 500_000 + conv
                            chat = private_chat(uid)
                            payload = message(chat, user(uid), text, message_id=tag)
                            await tg.push({"message": payload})
                        elif platform == "slack":
                            event = message_event(
                                text, user=f"U{conv:06d}", channel=f"D{conv:06d}", ts=f"{tag}.0001"
                            )
                            await slack.push("events_api", event_callback(event))
                        else:
                            channel_id = discord_channels[conv % len(discord_channels)]
                            author = user_payload(str(100000000000000000 + conv), f"u{conv}")
                            payload = message_payload(
                                id=str(960000000000000000 + tag),
                                channel_id=channel_id,
                                author=author,
                                content=f"<@{DISCORD_BOT_ID}> {text}",
                                guild_id=discord_fake.guild_of(channel_id),
                                mentions=[bot_user],
                            )
                            await discord_fake.dispatch("MESSAGE_CREATE", payload)
                        due = start + tag * interval
                        await asyncio.sleep(max(0.0, due - time.monotonic()))
                    print(f"  round {round_no + 1}/{args.messages} sent", flush=True)
                sent_s = time.monotonic() - start
                # let the last turns finish (bounded), then stop everything
                try:
                    async with asyncio.timeout(args.settle_seconds):
                        while len(ledger.answered) < total:  # noqa: ASYNC110
                            await asyncio.sleep(0.2)
                except TimeoutError:
                    pass
                await asyncio.sleep(1.0)  # late duplicates would show up here
                elapsed_s = time.monotonic() - start
                health = {name: h.state for name, h in app.channel_health().items()}
                sampler.cancel()
                for task in watchers:
                    task.cancel()
            inbox = await _inbox_counts(Path(state) / "hatchway.db")
            tool_calls = await _tool_call_counts(Path(state) / "hatchway.db")

    lost = sorted(t for t in range(1, total + 1) if ledger.answered[t] == 0)
    duplicated = sorted(t for t, n in ledger.answered.items() if n > 1)
    growth = (max(rss) - rss[0]) if rss else 0.0
    warmup_turns = max(args.conversations, int(total * args.warmup))
    slope = rss_slope_per_10k(rss_by_turns, warmup_turns)
    mcp_expected = total // args.mcp_every if args.mcp_every else 0
    mcp_ok = tool_calls.get(("executed", True), 0)
    print()
    print(f"platforms            {', '.join(platforms)}")
    print(f"conversations        {args.conversations}  x {args.messages} messages")
    print(f"sent                 {total} in {sent_s:.1f} s")
    print(f"answered             {sum(1 for t in range(1, total + 1) if ledger.answered[t])}")
    print(f"lost                 {len(lost)}  {lost[:10]}")
    print(f"duplicated           {len(duplicated)}  {duplicated[:10]}")
    print(f"throughput           {total / elapsed_s:.1f} turns/s over {elapsed_s:.1f} s")
    latency_s = sorted(ledger.latency_s)
    print(
        "reply latency        "
        f"p50 {percentile(latency_s, 0.5) * 1000:.0f} ms, "
        f"p95 {percentile(latency_s, 0.95) * 1000:.0f} ms, "
        f"max {max(ledger.latency_s, default=float('nan')) * 1000:.0f} ms"
    )
    print(
        f"RSS                  start {rss[0] if rss else 0:.1f} MB,"
        f" max {max(rss, default=0):.1f} MB, end {rss[-1] if rss else 0:.1f} MB,"
        f" growth {growth:.1f} MB ({len(rss)} samples)"
    )
    if slope is None:
        print("RSS slope            too few samples after warm-up")
    else:
        after = sum(1 for turns, _ in rss_by_turns if turns >= warmup_turns)
        print(
            f"RSS slope            {slope:+.1f} MB per 10k turns"
            f" (fit over {after} samples after {warmup_turns} warm-up turns)"
        )
    print(
        f"MCP calls            {mcp_ok} ok of {mcp_expected} expected"
        f" (every {args.mcp_every or '-'} turns); by outcome {_outcomes(tool_calls)}"
    )
    print(f"inbox rows           {dict(inbox)}")
    print(f"channel health       { {k: str(v) for k, v in health.items()} }")
    ok = (
        not lost
        and not duplicated
        and growth <= args.max_rss_growth_mb
        and mcp_ok == mcp_expected == sum(tool_calls.values())
    )
    print(f"VERDICT              {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


async def _inbox_counts(db: Path) -> dict[str, int]:
    import sqlite3

    def read() -> dict[str, int]:
        with sqlite3.connect(db) as conn:
            return dict(conn.execute("SELECT status, COUNT(*) FROM inbox GROUP BY status"))

    return await asyncio.to_thread(read)


async def _tool_call_counts(db: Path) -> dict[tuple[str, bool], int]:
    """MCP tool calls by (status, whether the tool's answer came back: the observation
    holds the echoed text, inside the marks of data from outside the conversation)."""
    import sqlite3

    def read() -> dict[tuple[str, bool], int]:
        with sqlite3.connect(db) as conn:
            rows = conn.execute(
                "SELECT status, observation LIKE '%via mcp t%', COUNT(*) FROM tool_calls"
                " WHERE tool = ? GROUP BY 1, 2",
                (MCP_TOOL,),
            )
            return {(status, bool(answered)): n for status, answered, n in rows}

    return await asyncio.to_thread(read)


def _outcomes(counts: dict[tuple[str, bool], int]) -> str:
    parts = [f"{status}{'' if ok else ' (no answer)'} {n}" for (status, ok), n in counts.items()]
    return ", ".join(sorted(parts)) or "none"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="spread the traffic over this")
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--messages", type=int, default=2, help="messages per conversation")
    parser.add_argument("--concurrency", type=int, default=32, help="agent.max_concurrent_turns")
    parser.add_argument("--settle-seconds", type=float, default=60.0)
    parser.add_argument("--max-rss-growth-mb", type=float, default=150.0)
    parser.add_argument(
        "--mcp-every", type=int, default=5, help="an MCP tool call every N turns (0: none)"
    )
    parser.add_argument(
        "--warmup", type=float, default=0.2, help="share of turns left out of the RSS slope"
    )
    parser.add_argument(
        "--skip", action="append", default=[], choices=["telegram", "slack", "discord"]
    )
    smoke = {"seconds": 3.0, "conversations": 10, "messages": 1, "settle_seconds": 20.0}
    return asyncio.run(soak(parse_args(parser, smoke=smoke)))


if __name__ == "__main__":
    sys.exit(main())
