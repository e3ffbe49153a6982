"""Load under ``kill -9``: many conversations, the daemon killed while turns are in flight.

Per platform (Telegram DMs, Slack DMs, Discord guild channels with a mention, each through
its loopback fake and the real client library), ``--conversations`` people send
``--messages`` messages each to the real daemon (``python -m bot.cli run``, state in a
temporary directory). The model (an OpenAI-compatible fake) answers every message in two
steps: a ``shell`` call appending the message's tag to a file (a side effect counted per
message), then ``answer <tag>``, so every answer is matched to its message.

The messages are spread over ``--rounds`` rounds. In each round the daemon is started, the
round's messages are sent, and the daemon dies by SIGKILL while turns are in flight: either
killed from outside once a random number of the round's answers were posted, or killing
itself at a random crash point (``HATCHWAY_CRASH_AT=<point>:<n>``, n random: the n-th time a
turn reaches it). Part of the next round's messages are sent while it is down. After the
last round it is started once more and left to settle; then each conversation gets one
more message, and once all of those are answered (turns of a conversation run in order)
nothing about the earlier ones is still pending, and the daemon is stopped.

Counted per message: answered (posts carrying its tag: once, twice), sent again marked as a
possible repeat (a reply whose delivery no check could decide: counted apart, and the
undecided replies as the daemon's metric counts them), noticed (its "Please ask again"
reply, from the outbox, checked against the notices each conversation received on the
platform), both, lost (neither), and the runs of its ``shell`` command; and every edit that
changed a message, by a process never told its id (Telegram's edit probe must make none).
The exit status is 0 only with nothing lost, nothing answered twice unmarked, nothing both
answered and noticed, no command run twice, every notice on the platform accounted for and
no probe edit that changed a message.

    python bench/crash_load.py                        # 50 x 3 per platform, 5 rounds
    python bench/crash_load.py --platform telegram --conversations 10 --seed 7

Traffic goes only to 127.0.0.1. What each fake does while the daemon is down is described in
``tests/reliability/platform_drivers.py`` (Slack's retries are played by the driver).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")


from bench.crash_tally import (  # noqa: E402
    TAG,
    Tally,
    answered_tags,
    barrier_text,
    message_text,
)
from bench.smoke import parse_args  # noqa: E402
from tests.fakes.discord_server import FakeDiscord  # noqa: E402
from tests.fakes.openai_server import JsonObject, OpenAIFake, Reply  # noqa: E402
from tests.fakes.slack_server import FakeSlack  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402
from tests.ops.daemon_process import DaemonProcess, start_daemon  # noqa: E402
from tests.reliability.crash_rig import daemon_env, write_config  # noqa: E402
from tests.reliability.platform_drivers import (  # noqa: E402
    PLATFORMS,
    SLACK_APP_TOKEN,
    SLACK_BOT_TOKEN,
    TELEGRAM_TOKEN,
    DiscordDriver,
    PlatformDriver,
    SlackDriver,
    TelegramDriver,
    redeliver,
)

#: Where a round's daemon may kill itself; "kill" is SIGKILL from outside.
MODES = (
    "kill",
    "after_admit",
    "after_model_call",
    "after_tool",
    "after_record",
    "after_send",
    "after_mark",
)
#: Crash points on one platform's path only (Telegram: recorded by the adapter, the request
#: not made, or made and its message's id not recorded).
PLATFORM_MODES = {"telegram": ("before_request", "after_request")}
RAN = "ran.txt"


def echo_rule(body: JsonObject) -> Reply:
    """The model's answer to one request: a message tagged ``t<N>x`` gets a ``shell`` call
    appending the tag to :data:`RAN`, then (the call's result back) ``answer t<N>x``; the
    closing message of a conversation (``b<N>x``) is answered at once."""
    messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
    users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
    found = TAG.search(users[-1]) if users else None
    tag = found.group(0) if found else "none"
    after_tool = bool(messages) and messages[-1].get("role") == "tool"
    if after_tool or not tag.startswith("t"):
        return Reply(text=f"answer {tag}")
    return Reply(tool_calls=(("shell", {"command": f"echo {tag} >> {RAN}"}),))


def echo_model() -> OpenAIFake:
    """The OpenAI fake answering every request by :func:`echo_rule`."""
    model = OpenAIFake(model="gpt-4o-mini")
    model.answer_with(echo_rule)
    return model


@asynccontextmanager
async def platform(name: str, conversations: int) -> AsyncIterator[PlatformDriver]:
    if name == "telegram":
        async with FakeTelegram(TELEGRAM_TOKEN) as tg:
            yield TelegramDriver(fake=tg)
    elif name == "slack":
        async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack:
            yield SlackDriver(fake=slack)
    else:
        async with FakeDiscord() as fake:
            yield DiscordDriver(fake=fake, conversations=conversations)


async def until(check: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``check`` every 20 ms for up to ``timeout_s``; whether it came true."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.02)
    return bool(check())


async def started(daemon: DaemonProcess, driver: PlatformDriver, timeout_s: float) -> bool:
    """Wait until the daemon is ready and connected; False when it died first (a crash
    point reached by start-up recovery, or by a turn it resumed)."""

    def ready_or_dead() -> bool:
        ready = any(m.get("READY") == "1" for m in daemon.notify.messages)
        return ready or daemon.proc.returncode is not None

    await until(ready_or_dead, timeout_s)
    if daemon.proc.returncode is not None:
        return False
    await driver.connected()
    await redeliver(driver)
    return True


async def one_round(
    *,
    config: Path,
    driver: PlatformDriver,
    plan: list[tuple[int, int]],
    rng: random.Random,
    args: argparse.Namespace,
) -> tuple[str, list[int]]:
    """Start the daemon, send ``plan`` (tag, conversation), make it die by SIGKILL while
    the turns are in flight; returns how it died and how many messages went out while it
    was down (all of them when it died during start-up), by tag."""
    # every draw made up front: the same seed gives the same rounds whatever happens
    mode = rng.choice(MODES + PLATFORM_MODES.get(driver.name, ()))
    nth = rng.randint(1, max(1, len(plan) // 2))
    goal = rng.randint(1, max(1, len(plan) - 1))
    crash_at = None if mode == "kill" else f"{mode}:{nth}"
    down: list[int] = []
    env = daemon_env(driver.environment(), crash_at=crash_at)
    async with start_daemon(config, env=env) as daemon:
        try:
            if not await started(daemon, driver, args.round_seconds):
                how = f"crash at {crash_at} during start-up"
                down = [tag for tag, _ in plan]
                driver.went_down()
                for tag, conversation in plan:  # they arrive while it is down
                    await driver.send(conversation, message_text(tag))
            else:
                before = len(answered_tags(driver))
                for tag, conversation in plan:
                    if daemon.proc.returncode is not None:  # it died at its crash point
                        down.append(tag)
                    await driver.send(conversation, message_text(tag))
                    await asyncio.sleep(args.gap)
                if crash_at is None:
                    reached = await until(
                        lambda: len(answered_tags(driver)) - before >= goal, args.round_seconds
                    )
                    how = f"kill -9 after {len(answered_tags(driver)) - before} answers"
                    how += "" if reached else f" (of {goal}: timed out)"
                else:
                    how = f"crash at {crash_at}"
                    if not await until(
                        lambda: daemon.proc.returncode is not None, args.round_seconds
                    ):
                        how += " (not reached: kill -9)"
            if daemon.proc.returncode is None:
                daemon.proc.kill()
            status = await daemon.wait_exit()
        finally:
            keep_log(config.parent, daemon, args)
    driver.went_down()
    sent = {tag for tag, _ in plan}
    return f"{how}, exit {status}; sent {min(sent, default=0)}..{max(sent, default=0)}", down


async def last_start(
    *, config: Path, driver: PlatformDriver, tally: Tally, args: argparse.Namespace
) -> None:
    """Start the daemon without a crash point and let it settle: every message answered
    or noticed (or ``--settle-seconds``), then one more message per conversation, answered
    after whatever the earlier ones caused; then stop it."""
    conversations = args.conversations
    async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
        try:
            assert await started(daemon, driver, args.round_seconds), "it died"
            settled = await until(lambda: tally.settled(driver), args.settle_seconds)
            for conversation in range(conversations):
                await driver.send(conversation, barrier_text(conversation))
            closed = await until(
                lambda: tally.barriers_answered(driver) >= conversations, args.settle_seconds
            )
            daemon.signal(signal.SIGTERM)
            tally.final_exit = await daemon.wait_exit()
            tally.settled_in_time = settled and closed
        finally:
            keep_log(config.parent, daemon, args)


def keep_log(state: Path, daemon: DaemonProcess, args: argparse.Namespace) -> None:
    """With ``--keep``: the daemon's log events, one file per start, beside the state."""
    if not args.keep:
        return
    starts = len(list(state.glob("daemon-*.jsonl")))
    lines = (json.dumps(event) for event in daemon.events)
    (state / f"daemon-{starts + 1}.jsonl").write_text("\n".join(lines), encoding="utf-8")


async def run_platform(name: str, args: argparse.Namespace, rng: random.Random) -> Tally:
    conversations = args.conversations
    plan = [
        (m * conversations + c + 1, c) for m in range(args.messages) for c in range(conversations)
    ]
    share = -(-len(plan) // args.rounds)
    chunks = [plan[i : i + share] for i in range(0, len(plan), share)]
    prefix = f"hatchway-crash-load-{name}-"
    kept = contextlib.nullcontext(tempfile.mkdtemp(prefix=prefix)) if args.keep else None
    with kept or tempfile.TemporaryDirectory(prefix=prefix) as state:
        workspace = Path(state) / "workspace"
        workspace.mkdir()
        async with platform(name, conversations) as driver, echo_model() as llm:
            config = write_config(
                Path(state) / "hatchway.toml",
                llm_url=llm.base_url,
                tables=[driver.channel_table()],
                workspace=workspace,
                concurrency=args.concurrency,
            )
            started_at = time.monotonic()
            tally = Tally(platform=name, plan=plan)
            early: list[tuple[int, int]] = []
            for index, chunk in enumerate(chunks):
                how, down = await one_round(
                    config=config,
                    driver=driver,
                    plan=[p for p in chunk if p not in early],
                    rng=rng,
                    args=args,
                )
                # part of the next round's messages arrive while the daemon is down
                following = chunks[index + 1] if index + 1 < len(chunks) else []
                early = following[: int(len(following) * args.down_share)]
                for tag, conversation in early:
                    await driver.send(conversation, message_text(tag))
                tally.while_down.update(f"t{tag}x" for tag in [*down, *(t for t, _ in early)])
                tally.rounds.append(how)
                print(f"  {name} round {index + 1}/{len(chunks)}: {how}", flush=True)
            await last_start(config=config, driver=driver, tally=tally, args=args)
            tally.elapsed_s = time.monotonic() - started_at
            tally.collect(driver, Path(state) / "hatchway.db", workspace, RAN)
            if args.keep:
                print(f"  {name} state kept in {state}", flush=True)
    return tally


async def main_async(args: argparse.Namespace) -> int:
    # a fake's handler cut off by the kill is expected: aiohttp would log each one
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    rng = random.Random(args.seed)
    tallies = []
    for name in args.platform or PLATFORMS:
        tallies.append(await run_platform(name, args, rng))
    print()
    print(
        f"{args.conversations} conversations x {args.messages} messages per platform,"
        f" {args.rounds} rounds of kill -9, seed {args.seed}"
    )
    for tally in tallies:
        print()
        print(tally.table())
    ok = all(t.ok() for t in tallies)
    print()
    print(f"VERDICT              {'PASS' if ok else 'FAIL'}")
    if args.smoke:
        print("(--smoke: the verdict does not set the exit status; the crash matrix tests do)")
        return 0
    return 0 if ok else 1


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", action="append", choices=PLATFORMS)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--messages", type=int, default=3, help="messages per conversation")
    parser.add_argument("--rounds", type=int, default=5, help="kill -9 rounds")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--gap", type=float, default=0.01, help="seconds between messages")
    parser.add_argument(
        "--down-share", type=float, default=0.3, help="share of a round sent while down"
    )
    parser.add_argument("--concurrency", type=int, default=None, help="max_concurrent_turns")
    parser.add_argument("--round-seconds", type=float, default=60.0)
    parser.add_argument("--settle-seconds", type=float, default=60.0)
    parser.add_argument("--keep", action="store_true", help="keep each state directory")
    smoke = {"conversations": 3, "messages": 2, "rounds": 1, "settle_seconds": 20.0}
    return parse_args(parser, smoke=smoke, argv=argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(main_async(parse(argv)))


if __name__ == "__main__":
    sys.exit(main())
