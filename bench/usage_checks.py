"""The event loop's CPU for usage and budgets per turn, alone: what ``bench/throughput.py``
spreads over a whole turn, measured without the turn around it.

For each of ``--turns`` turns (each a new sender in a new conversation, as in the throughput
bench), the calls a turn with one tool call makes of :mod:`bot.usage.meter`: the check before
the first model call, the first call's usage recorded into a unit of work and counted, the
check before the second call, the second call recorded, the end. Once with a price table and
no budget (recording only), once with a budget of every kind (per user, per conversation, for
the agent and for the channel; daily and monthly; tokens and cost; none reached), on a real
SQLite file (the ledger's first read). The units of work are built, not committed: their
trips are the turn's own (the tool batch's and the answer's).

    python bench/usage_checks.py [--turns 20000] [--repeat 5]

Prints the thread CPU per turn of each, medians of ``--repeat`` interleaved runs, and the
difference: what the budget checks add to a turn.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

from bench.machine import describe_machine
from bench.smoke import parse_args
from bench.throughput import ROOMY
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.ops.logs import configure_logging
from bot.providers.base import ChatMessage, CompletionRequest, ProviderReply, Usage
from bot.store import Store, UnitOfWork
from bot.turn import TurnIdentity
from bot.usage.meter import UsageMeter

CHANNEL = ChannelRef(kind="console", alias="main")
REQUEST = CompletionRequest(system="s", messages=[ChatMessage(role="user", content="hi")])
REPLY = ProviderReply(
    text="ok",
    usage=Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=1024),
    model="gpt-4o-mini",
    provider="default",
)


def settings(folder: str, *, budgets: bool) -> Settings:
    tables: dict[str, Any] = {
        "pricing": {"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075}}
    }
    if budgets:
        tables["budgets"] = {
            "time_zone": "Europe/Berlin",
            "per_user": ROOMY,
            "per_conversation": ROOMY,
            "agents": {"default": ROOMY},
            "channels": {str(CHANNEL): ROOMY},
        }
    return parse_settings(
        {"state_dir": folder, "channels": {"console": {"main": {}}}, **tables},
        environ={},
        require_provider=False,
    )


def turn(n: int) -> TurnIdentity:
    envelope = IngressEnvelope(
        channel=CHANNEL,
        message_id=f"m{n}",
        conversation_id=f"c{n}",
        sender=Sender(id=f"user{n}"),
        text="what is six times seven?",
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=f"c{n}"),
    )
    return TurnIdentity(turn_id=f"t{n}", session_key=f"console.main:c{n}", envelope=envelope)


async def per_turn_us(turns: int, *, budgets: bool) -> float:
    """Thread CPU per turn, in microseconds."""
    with tempfile.TemporaryDirectory() as folder:
        async with await Store.open(Path(folder) / "bench.db") as store:
            meter = UsageMeter(settings(folder, budgets=budgets), store)
            identities = [turn(n) for n in range(turns + 1)]
            await meter.turn(identities[0], agent="default", provider="default").refusal()
            started = time.thread_time()
            for identity in identities[1:]:
                usage = meter.turn(identity, agent="default", provider="default")
                await usage.refusal()
                usage.add(REQUEST, REPLY, 0.2)
                usage.record(UnitOfWork())
                usage.committed()
                await usage.cut_short()
                usage.add(REQUEST, REPLY, 0.2)
                usage.record(UnitOfWork())
                usage.committed()
                usage.finish()
            return (time.thread_time() - started) / turns * 1e6


async def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    recording: list[float] = []
    checked: list[float] = []
    for _ in range(args.repeat):
        recording.append(await per_turn_us(args.turns, budgets=False))
        checked.append(await per_turn_us(args.turns, budgets=True))
    plain, budgets = statistics.median(recording), statistics.median(checked)
    print(
        f"{args.turns} turns of 2 model calls, medians of {args.repeat}: recording only "
        f"{plain:.1f} us/turn; with budgets of every kind {budgets:.1f} us/turn; "
        f"the budget checks add {budgets - plain:.1f} us/turn"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parse_args(parser, smoke={"turns": 500, "repeat": 1})
    with open(os.devnull, "w") as devnull:
        configure_logging("warning", "json", devnull)
        asyncio.run(main(arguments))
