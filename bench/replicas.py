"""Replicas on PostgreSQL beside one process on SQLite: turns/s, latency, CPU per turn, takeover.

The daemons are real (``hatchway run``, each with a state directory of its own:
:class:`tests.reliability.replica_rig.Fleet`), over one PostgreSQL server started for the
bench on a temporary data directory (:func:`tests.pg.start_server`, a fresh database per
configuration), or, for the comparison, one daemon on a SQLite file. The platform is the
Slack fake in Socket Mode: every replica holds a connection and the bench spreads the
messages over them in turn, as Slack spreads an app's events
(:class:`tests.reliability.replica_load.SpreadSlackDriver`). The model is the OpenAI fake
in a process of its own (:mod:`bench.model_server`: one answer at once per turn, or with
``--tool`` a ``calculator`` call first), so its CPU is nobody's but its own.

Each configuration (SQLite with one process; PostgreSQL with 1, 2, 3 replicas: ``--replicas``)
gets the same load: a warm-up burst, then ``--rounds`` bursts of ``--conversations`` direct
messages, each from a new person, pushed at once. Per round: turns/s (answers / wall time from
the first push to the last answer), push-to-answer latency p50 and p99 (the answer's arrival
at the fake), each replica's CPU (``/proc/<pid>/stat``) per turn it answered, all replicas'
CPU per turn, and the PostgreSQL server's CPU per turn (its processes'), since SQLite does
the same work inside the daemon. The medians of the rounds are printed per configuration,
after what each replica spends idle (CPU ms per second with no message). ``--db-stats``
adds PostgreSQL's commits and table scans and writes per turn; ``--statements`` has the
server log every statement (``log_statement = all``) and prints the statements per turn, by
kind (the log's own cost shows in the server's CPU: measure it apart); ``--py-spy DIR`` records each
replica during the measured rounds (``py-spy record``, collapsed stacks; ``PY_SPY`` names the
program when it is not on the path).

Takeover (``--takeovers``, on the Telegram fake, two replicas, the ``[replicas]`` defaults
unless ``--lease-ttl``/``--heartbeat`` say otherwise): the replica polling ``getUpdates`` is
killed with SIGKILL and a message is sent at once; printed are the seconds until the other
replica's first poll, and until the message is answered. The killed replica is started again
before the next kill (the new holder is killed then).

    python bench/replicas.py [--conversations 300] [--rounds 3] [--replicas 1 2 3]
                             [--takeovers 3] [--tool] [--lease-ttl S --heartbeat S]
                             [--statements] [--db-stats] [--py-spy DIR]

The daemons run the ``[replicas]`` defaults, as a deployment does.

Targets (a 2-core machine shared by PostgreSQL, the fakes and the load): daemon CPU per turn
on PostgreSQL within 25 % of SQLite's; two replicas' turns/s at least 1.3x one replica's;
each replica's CPU per turn within 10 % of the single replica's; takeover under 5 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import asyncpg

from bench.machine import describe_machine, percentile, process_cpu_s
from bench.model_server import FINAL, ModelServer
from bench.smoke import parse_args
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram
from tests.pg import PgServer, start_server
from tests.reliability.crash_rig import daemon_env
from tests.reliability.platform_drivers import (
    SLACK_APP_TOKEN,
    SLACK_BOT_TOKEN,
    TELEGRAM_TOKEN,
    TelegramDriver,
)
from tests.reliability.replica_load import SpreadSlackDriver
from tests.reliability.replica_rig import QUICK_LEASES, TELEGRAM_POLL, Fleet, until

NAMES = ("r1", "r2", "r3")
ROUND_S = 300.0
IDLE_S = 5.0


@dataclass
class Answers:
    """The answers the Slack fake received, read incrementally: by conversation, when it
    arrived and from which replica."""

    slack: FakeSlack
    seen: int = 0
    at: dict[int, float] = field(default_factory=dict)
    by: dict[int, str] = field(default_factory=dict)

    def read(self) -> int:
        calls = self.slack.calls
        for call in calls[self.seen :]:
            channel = str(call.params.get("channel", ""))
            if call.method != "chat.postMessage" or not channel.startswith("D"):
                continue
            if FINAL in str(call.params.get("text", "")):
                conversation = int(channel[1:])
                self.at.setdefault(conversation, call.at)
                self.by.setdefault(conversation, call.client)
        self.seen = len(calls)
        return len(self.at)


def pg_cpu_s(server: PgServer | None) -> float:
    """CPU time of the PostgreSQL server's processes (the postmaster and its children)."""
    if server is None:
        return 0.0
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(entry.name) == postmaster or int(fields[1]) == postmaster:
                total += process_cpu_s(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue  # a backend that ended meanwhile
    return total


TABLE_STATS = (
    "SELECT relname, seq_scan, coalesce(idx_scan, 0), n_tup_ins, n_tup_upd, n_tup_del"
    " FROM pg_stat_user_tables"
)


async def db_stats(url: str | None) -> dict[str, tuple[int, ...]]:
    """The database's counters (``pg_stat_database``: commits; ``pg_stat_user_tables``:
    scans and rows written, by table); empty without a URL. The statistics collector is
    asked to flush first, so the counters include what just happened."""
    if url is None:
        return {}
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        found = {
            "transactions": tuple(
                await conn.fetchrow(
                    "SELECT xact_commit, xact_rollback FROM pg_stat_database"
                    " WHERE datname = current_database()"
                )
            )
        }
        for row in await conn.fetch(TABLE_STATS):
            found[str(row[0])] = tuple(int(v) for v in row[1:])
    finally:
        await conn.close()
    return found


Counters = dict[str, tuple[int, ...]]


def per_turn(before: Counters, after: Counters, turns: int) -> str:
    """The counters' growth per turn: transactions, then per table (seq/idx scans, rows
    inserted/updated/deleted), tables untouched left out."""
    if not after:
        return ""
    parts = []
    for name, values in sorted(after.items()):
        was = before.get(name, (0,) * len(values))
        grown = [(v - b) / turns for v, b in zip(values, was, strict=True)]
        if any(g > 0.005 for g in grown):
            parts.append(f"{name} " + "/".join(f"{g:.2f}" for g in grown))
    return "; ".join(parts)


@dataclass(frozen=True)
class RoundFigures:
    turns: int
    wall_s: float
    p50_ms: float
    p99_ms: float
    cpu_ms_per_turn: dict[str, float]  # per replica: its CPU / the turns it answered
    answered: dict[str, int]
    fleet_cpu_ms_per_turn: float  # all replicas' CPU / all turns
    pg_cpu_ms_per_turn: float
    model_cpu_ms_per_turn: float
    bench_cpu_ms_per_turn: float  # this process: the Slack fake and the load
    db: str = ""  # the database's counters per turn (--db-stats)
    statements: Counter[str] = field(default_factory=Counter)  # per kind (--statements)

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.wall_s


async def burst(
    fleet: Fleet,
    driver: SpreadSlackDriver,
    answers: Answers,
    *,
    first: int,
    count: int,
    server: PgServer | None,
    model: ModelServer,
    stats: bool = False,
    statements: bool = False,
) -> RoundFigures:
    """``count`` conversations from ``first`` on, one message each, pushed at once."""
    counters = await db_stats(fleet.url) if stats else {}
    log_at = server.log_file.stat().st_size if statements and server is not None else None
    running = fleet.running()
    cpu0 = {r.name: process_cpu_s(r.pid) for r in running}
    pg0, model0, bench0 = pg_cpu_s(server), model.cpu_s(), process_cpu_s(os.getpid())
    pushed: dict[int, float] = {}
    start = time.monotonic()
    for conversation in range(first, first + count):
        pushed[conversation] = time.monotonic()
        await driver.send(conversation, f"question {conversation}")
    wanted = set(pushed)

    def done() -> bool:
        answers.read()
        return wanted <= answers.at.keys()

    if not await until(done, ROUND_S):
        missing = len(wanted - answers.at.keys())
        raise RuntimeError(f"{missing} of {count} messages unanswered after {ROUND_S:.0f} s")
    last = max(answers.at[c] for c in wanted)
    cpu = {r.name: process_cpu_s(r.pid) - cpu0[r.name] for r in running}
    bench_cpu = process_cpu_s(os.getpid()) - bench0
    answered = Counter(answers.by[c] or running[0].name for c in wanted)
    latencies = sorted((answers.at[c] - pushed[c]) * 1000 for c in wanted)
    if stats:
        await asyncio.sleep(1.5)  # backends report their counters at most once a second
    db = per_turn(counters, await db_stats(fleet.url), count) if stats else ""
    logged = Counter[str]()
    if log_at is not None and server is not None:
        logged = statements_logged(server, log_at)
    return RoundFigures(
        turns=count,
        wall_s=last - start,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
        cpu_ms_per_turn={name: 1000 * cpu[name] / answered[name] for name in cpu if answered[name]},
        answered=dict(answered),
        fleet_cpu_ms_per_turn=1000 * sum(cpu.values()) / count,
        pg_cpu_ms_per_turn=1000 * (pg_cpu_s(server) - pg0) / count,
        model_cpu_ms_per_turn=1000 * (model.cpu_s() - model0) / count,
        bench_cpu_ms_per_turn=1000 * bench_cpu / count,
        db=db,
        statements=logged,
    )


#: A statement the server logged (``log_statement = all``): simple or extended protocol.
LOGGED = re.compile(r"LOG:  (?:statement|execute [^:]*): (.*)")


def statements_logged(server: PgServer, offset: int) -> Counter[str]:
    """The statements the server logged from ``offset`` of its log on, by kind: the first
    words of each, up to its table (``UPDATE inbox``, ``SELECT … FROM session_owners``)."""
    found = Counter[str]()
    with open(server.log_file, errors="replace") as log:
        log.seek(offset)
        for line in log:
            match = LOGGED.search(line)
            if match is not None:
                found[statement_kind(match.group(1))] += 1
    return found


def statement_kind(text: str) -> str:
    """``INSERT INTO inbox``, ``UPDATE session_owners``, ``SELECT … FROM replicas``, ``BEGIN``."""
    words = text.split()
    if not words:
        return "?"
    verb = words[0].upper()
    lowered = [w.lower() for w in words]
    for marker in ("into", "update", "from"):
        if marker in lowered[:40]:
            table = words[lowered.index(marker) + 1].strip("(),;")
            return f"{verb} {table}" if verb != "SELECT" else f"SELECT … FROM {table}"
    return " ".join(words[:2])


async def log_statements(server: PgServer) -> None:
    """Have the server log every statement (for ``--statements``)."""
    conn = await asyncpg.connect(server.url())
    try:
        await conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        await conn.execute("SELECT pg_reload_conf()")
    finally:
        await conn.close()


def describe_statements(figures: RoundFigures) -> str:
    counts = figures.statements
    total = sum(counts.values()) / figures.turns
    kinds = ", ".join(
        f"{kind} {n / figures.turns:.2f}"
        for kind, n in counts.most_common()
        if n / figures.turns >= 0.05
    )
    return f"{total:.1f} statements per turn: {kinds}"


async def configuration(
    label: str,
    replicas: int,
    *,
    server: PgServer | None,
    model: ModelServer,
    args: argparse.Namespace,
) -> list[RoundFigures]:
    url = None if server is None else server.url(server.create_database())
    with tempfile.TemporaryDirectory(prefix="hatchway-replicas-") as root:
        async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack:
            driver = SpreadSlackDriver(fake=slack)
            async with Fleet(
                Path(root),
                url=url,
                llm_url=model.base_url,
                driver=driver,
                env=daemon_env(driver.environment()),
                concurrency=args.max_concurrent_turns,
                leases={},  # the [replicas] defaults, as a deployment runs
                log_level="warning",
                storage_extra=f"pool_size = {args.pool_size}\n" if args.pool_size else "",
            ) as fleet:
                for name in NAMES[:replicas]:  # one by one: the first migrates
                    await fleet.start(name)
                    await driver.wait_client(name, ROUND_S)
                answers = Answers(slack)
                first = 0
                await idle_cpu(fleet, label, server, args.idle_seconds)
                spies: list[asyncio.subprocess.Process] = []
                if args.warmup:
                    await burst(
                        fleet,
                        driver,
                        answers,
                        first=0,
                        count=args.warmup,
                        server=server,
                        model=model,
                    )
                    first = args.warmup
                if args.py_spy:
                    spies = await spy(fleet, label, Path(args.py_spy))
                results = []
                for number in range(1, args.rounds + 1):
                    figures = await burst(
                        fleet,
                        driver,
                        answers,
                        first=first,
                        count=args.conversations,
                        server=server,
                        model=model,
                        stats=args.db_stats,
                        statements=args.statements,
                    )
                    first += args.conversations
                    results.append(figures)
                    print(f"  {label} round {number}: {describe(figures)}", flush=True)
                    if number == args.rounds:
                        await unspy(spies)
                    if figures.statements:
                        print(f"    {describe_statements(figures)}", flush=True)
                    if figures.db:
                        print(
                            f"    per turn: transactions (commits/rollbacks) and, by table,"
                            f" seq scans/index scans/inserted/updated/deleted: {figures.db}"
                        )
    return results


async def idle_cpu(fleet: Fleet, label: str, server: PgServer | None, idle_s: float) -> None:
    """Print what each replica (and the PostgreSQL server) spends with nothing to do:
    heartbeats, sweeps, merges of shared counters (over ``idle_s``)."""
    running = fleet.running()
    await asyncio.sleep(min(2.0, idle_s))  # start-up's own work is over
    before = {r.name: process_cpu_s(r.pid) for r in running}
    pg = pg_cpu_s(server)
    await asyncio.sleep(idle_s)
    spent = ", ".join(
        f"{r.name} {1000 * (process_cpu_s(r.pid) - before[r.name]) / idle_s:.1f}" for r in running
    )
    pg_spent = 1000 * (pg_cpu_s(server) - pg) / idle_s
    print(f"  {label} idle: CPU ms/s {spent}; PostgreSQL {pg_spent:.1f}", flush=True)


async def spy(fleet: Fleet, label: str, folder: Path) -> list[asyncio.subprocess.Process]:
    """``py-spy record`` of every replica (collapsed stacks, one file each), for the
    measured rounds."""
    os.makedirs(folder, exist_ok=True)
    tool = os.environ.get("PY_SPY") or shutil.which("py-spy") or "py-spy"
    name = label.replace(", ", "-").replace(" ", "_")
    spies = []
    for replica in fleet.running():
        out = folder / f"{name}-{replica.name}.txt"
        spies.append(
            await asyncio.create_subprocess_exec(
                tool,
                "record",
                "--pid",
                str(replica.pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--output",
                str(out),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
            )
        )
    await asyncio.sleep(1.0)  # attached
    return spies


async def unspy(spies: list[asyncio.subprocess.Process]) -> None:
    for process in spies:
        process.send_signal(signal.SIGINT)
    for process in spies:
        await process.wait()


def describe(f: RoundFigures) -> str:
    per_replica = ", ".join(
        f"{name} {ms:.1f} ({f.answered[name]})" for name, ms in sorted(f.cpu_ms_per_turn.items())
    )
    return (
        f"{f.turns_per_s:6.1f} turns/s, p50 {f.p50_ms:6.0f} ms, p99 {f.p99_ms:6.0f} ms; "
        f"CPU ms/turn: replicas {f.fleet_cpu_ms_per_turn:.1f} [{per_replica}], "
        f"PostgreSQL {f.pg_cpu_ms_per_turn:.1f}, model {f.model_cpu_ms_per_turn:.1f}, "
        f"fakes and load {f.bench_cpu_ms_per_turn:.1f}"
    )


def medians(rounds: Sequence[RoundFigures]) -> dict[str, float]:
    per_replica = [ms for f in rounds for ms in f.cpu_ms_per_turn.values()]
    return {
        "turns_per_s": statistics.median(f.turns_per_s for f in rounds),
        "p50_ms": statistics.median(f.p50_ms for f in rounds),
        "p99_ms": statistics.median(f.p99_ms for f in rounds),
        "fleet_cpu": statistics.median(f.fleet_cpu_ms_per_turn for f in rounds),
        "replica_cpu_min": min(per_replica),
        "replica_cpu_max": max(per_replica),
        "pg_cpu": statistics.median(f.pg_cpu_ms_per_turn for f in rounds),
        "all_cpu": statistics.median(
            f.fleet_cpu_ms_per_turn
            + f.pg_cpu_ms_per_turn
            + f.model_cpu_ms_per_turn
            + f.bench_cpu_ms_per_turn
            for f in rounds
        ),
    }


# -- takeover ---------------------------------------------------------------------------------


async def takeovers(
    server: PgServer, model: ModelServer, args: argparse.Namespace
) -> list[tuple[float, float]]:
    """(seconds to the survivor's first poll, seconds to the answer) per kill."""
    leases: dict[str, float] = {}
    if args.lease_ttl is not None:
        leases = {
            "heartbeat_s": args.heartbeat or QUICK_LEASES["heartbeat_s"],
            "lease_ttl_s": args.lease_ttl,
            "max_clock_skew_s": args.clock_skew,
        }
    url = server.url(server.create_database())
    found = []
    with tempfile.TemporaryDirectory(prefix="hatchway-takeover-") as root:
        async with FakeTelegram(TELEGRAM_TOKEN) as tg:
            driver = TelegramDriver(fake=tg)
            async with Fleet(
                Path(root),
                url=url,
                llm_url=model.base_url,
                driver=driver,
                env=daemon_env(driver.environment()),
                leases=leases,
                log_level="info",  # lease events
            ) as fleet:
                await fleet.start("r1")
                await fleet.start("r2")
                for number in range(args.takeovers):
                    again = number + 1 < args.takeovers
                    found.append(await one_takeover(fleet, driver, number, restart=again))
    return found


async def one_takeover(
    fleet: Fleet, driver: TelegramDriver, number: int, *, restart: bool
) -> tuple[float, float]:
    """Kill the poller, send a message at once; the seconds until the other replica polls,
    and until the message is answered. With ``restart`` the killed replica is started
    again (for the next kill)."""
    tg = driver.fake
    holder = await fleet.wait_holder(TELEGRAM_POLL)
    other = "r2" if holder.name == "r1" else "r1"
    await asyncio.sleep(2.0)  # a steady state: the lease renewed a few times
    chat = TelegramDriver.chat(number)
    killed_at = time.monotonic()
    holder.daemon.proc.send_signal(signal.SIGKILL)
    await driver.send(number, f"after kill {number}")
    await fleet.kill(holder.name)

    def polls() -> list[float]:
        return [p.began for p in tg.poll_book.by(other) if p.began > killed_at]

    def answers() -> list[float]:
        return [
            c.at
            for c in tg.calls_of("sendMessage")
            if c.params.get("chat_id") == chat and c.at > killed_at
        ]

    if not await until(lambda: bool(polls()) and bool(answers()), ROUND_S):
        raise RuntimeError(f"no takeover within {ROUND_S:.0f} s")
    figures = (min(polls()) - killed_at, min(answers()) - killed_at)
    print(
        f"  takeover {number + 1}: {holder.name} killed; {other} polls after "
        f"{figures[0]:.2f} s, answers after {figures[1]:.2f} s",
        flush=True,
    )
    if restart:
        await fleet.start(holder.name)
    return figures


# -- main -------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    print(describe_machine())
    turn = "1 calculator call + 1 answer" if args.tool else "1 answer"
    print(
        f"Slack Socket Mode, {args.conversations} new DMs at once per round, {turn} each, "
        f"{args.rounds} rounds after a warm-up of {args.warmup}, "
        f"max_concurrent_turns={args.max_concurrent_turns} per replica, log level warning"
    )
    server = start_server()
    if args.statements:
        await log_statements(server)
    try:
        async with ModelServer(tool=args.tool) as model:
            summary: list[tuple[str, int, dict[str, float]]] = []
            configs: list[tuple[str, int, PgServer | None]] = (
                [] if args.takeover_only else [("SQLite, 1 process", 1, None)]
            )
            configs += (
                []
                if args.takeover_only
                else [
                    (f"PostgreSQL, {n} replica{'s' if n > 1 else ''}", n, server)
                    for n in args.replicas
                ]
            )
            for label, count, engine in configs:
                print(f"{label}:", flush=True)
                rounds = await configuration(label, count, server=engine, model=model, args=args)
                summary.append((label, count, medians(rounds)))
            times = await takeovers(server, model, args) if args.takeovers else []
    finally:
        server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)

    print()
    print(
        f"{'medians':<24}{'turns/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'CPU ms/turn':>13}{'per replica':>15}{'+PostgreSQL':>13}{'machine':>9}"
    )
    for label, _, m in summary:
        print(
            f"{label:<24}{m['turns_per_s']:>9.1f}{m['p50_ms']:>9.0f}{m['p99_ms']:>9.0f}"
            f"{m['fleet_cpu']:>13.2f}"
            f"{m['replica_cpu_min']:>7.2f}–{m['replica_cpu_max']:<7.2f}"
            f"{m['fleet_cpu'] + m['pg_cpu']:>13.2f}{m['all_cpu']:>9.2f}"
        )
    cores = len(os.sched_getaffinity(0))
    print(
        "machine: every process's CPU per turn (replicas, PostgreSQL, the model, the fakes and "
        f"the load); {cores} cores bound turns/s by {cores} s / that"
    )
    by_count = {count: m for label, count, m in summary if label.startswith("PostgreSQL")}
    sqlite = summary[0][2] if summary else {}
    print()
    if 1 in by_count:
        one = by_count[1]
        ratio = one["fleet_cpu"] / sqlite["fleet_cpu"]
        print(f"daemon CPU per turn, PostgreSQL 1 replica / SQLite: {ratio:.2f} (target <= 1.25)")
        whole = (one["fleet_cpu"] + one["pg_cpu"]) / sqlite["fleet_cpu"]
        print(f"  with the PostgreSQL server's CPU counted: {whole:.2f}")
        for count, m in sorted(by_count.items()):
            if count == 1:
                continue
            scale = m["turns_per_s"] / one["turns_per_s"]
            spread = max(
                abs(m["replica_cpu_min"] / one["fleet_cpu"] - 1),
                abs(m["replica_cpu_max"] / one["fleet_cpu"] - 1),
            )
            bound = 1000 * cores / m["all_cpu"]
            print(f"{count} replicas: the machine's CPU bounds turns/s by {bound:.0f}")
            target = " (target >= 1.3)" if count == 2 else ""
            print(
                f"{count} replicas: {scale:.2f}x one replica's turns/s{target}; each replica's "
                f"CPU per turn within {100 * spread:.0f} % of one replica's (target <= 10 %)"
            )
    if times:
        polls = statistics.median(t for t, _ in times)
        answers = statistics.median(a for _, a in times)
        print(
            f"takeover after kill -9 (median of {len(times)}): next poll {polls:.2f} s, "
            f"answer {answers:.2f} s (target < 5 s)"
        )


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=300, help="DMs per round, at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-concurrent-turns", type=int, default=32)
    parser.add_argument(
        "--pool-size", type=int, default=None, help="[storage] pool_size (default: its default)"
    )
    parser.add_argument("--tool", action="store_true", help="a calculator call before the answer")
    parser.add_argument("--takeovers", type=int, default=3, help="kill -9 of the poller (0: none)")
    parser.add_argument(
        "--takeover-only", action="store_true", help="measure only the takeover after kill -9"
    )
    parser.add_argument("--lease-ttl", type=float, default=None, help="[replicas] lease_ttl_s")
    parser.add_argument("--heartbeat", type=float, default=None, help="[replicas] heartbeat_s")
    parser.add_argument(
        "--py-spy",
        metavar="DIR",
        help="record each replica with py-spy during the measured rounds (collapsed stacks)",
    )
    parser.add_argument(
        "--db-stats",
        action="store_true",
        help="print PostgreSQL's transactions and table scans and writes per turn",
    )
    parser.add_argument(
        "--statements",
        action="store_true",
        help="log every statement on the PostgreSQL server and print the statements per turn",
    )
    parser.add_argument("--clock-skew", type=float, default=0.5, help="[replicas] max_clock_skew_s")
    parser.add_argument(
        "--idle-seconds", type=float, default=IDLE_S, help="idle CPU measured over this"
    )
    smoke = {
        "idle_seconds": 0.5,
        "conversations": 10,
        "rounds": 1,
        "warmup": 2,
        "replicas": [1],
        "takeovers": 1,
    }
    return parse_args(parser, smoke=smoke, argv=argv)


if __name__ == "__main__":
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(parse()))
