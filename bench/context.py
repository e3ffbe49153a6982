"""What group context costs: database trips and rows per kept message, trips per turn, and the
size of the model's request.

Builds the real :class:`bot.app.App` (gateway, agent loop, SQLite file) with the tests'
in-process channel and a scripted model, and measures, on SQLite's worker-thread trips
(``Database.trips``):

1. turns in a group conversation with group context **off** (the baseline);
2. the same turns with group context **on** for the alias but in direct messages, where
   it is never used (target: the same trips per turn as 1: keeping context adds no trip to a
   turn that does not use it);
3. ``--messages`` group messages not addressed to the bot, kept for context: trips and
   ``context_lines`` rows per kept message (target: one trip each; rows bounded by the
   window, ``--window``), none answered;
4. turns addressed to the bot in that conversation: trips per turn (one read more than 1)
   and the model request's size with the window (characters and estimated tokens) against
   the same question without context.

    python bench/context.py [--turns 200] [--messages 500] [--window 50] [--smoke]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import tempfile
from collections.abc import Sequence

from bench.machine import describe_machine
from bench.smoke import parse_args
from bot.agent.context_window import estimate_tokens
from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.ops.logs import configure_logging
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider, reply

CHANNEL = ChannelRef(kind="console", alias="main")
GROUP = "team-room"
CHATTER = "I think the migration should go first, then the API change; the release can wait a day"


def settings(state_dir: Path, window: int) -> Settings:
    return parse_settings(
        {
            "state_dir": str(state_dir),
            "agent": {"turn_timeout_s": 300.0},
            "channels": {
                "console": {
                    "main": {
                        "allowed_users": ["*"],
                        "require_mention": True,
                        "context": {"group_messages": window, "group_minutes": 600},
                    }
                }
            },
        },
        environ={},
        require_provider=False,
    )


def message(n: int, *, addressed: bool, direct: bool = False, user: str = "ann") -> IngressEnvelope:
    conversation = f"dm-{user}" if direct else GROUP
    return IngressEnvelope(
        channel=CHANNEL,
        message_id=f"m{n}",
        conversation_id=conversation,
        sender=Sender(id=user, display_name=user.title()),
        text="what do you think about the plan above?" if addressed else f"{CHATTER} ({n})",
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=conversation),
        is_direct=direct,
        is_group=not direct,
        addressed_to_bot=addressed or direct,
    )


async def turns(
    app: App, channel: FakeChannel, envelopes: Sequence[IngressEnvelope]
) -> tuple[float, int]:
    """Trips per turn for ``envelopes``, each answered before the next is sent."""
    host = channel.host
    assert host is not None
    db = app.store.db
    start = db.trips
    for envelope in envelopes:
        sent = len(channel.sent)
        await host.deliver(envelope)
        while len(channel.sent) <= sent or app.gateway.active_turns:  # noqa: ASYNC110
            await asyncio.sleep(0.001)
    return (db.trips - start) / len(envelopes), len(envelopes)


async def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    configure_logging("warning", "console")
    with tempfile.TemporaryDirectory() as folder:
        provider = ScriptedProvider(when_exhausted=reply("Migration first."))
        channel = FakeChannel(CHANNEL)
        config = settings(Path(folder), args.window)
        async with App(
            config, provider=provider, channels={str(CHANNEL): channel}, tools=[]
        ) as app:
            await channel.running.wait()
            host = channel.host
            assert host is not None
            ids = iter(range(1, 10**9))
            await turns(app, channel, [message(next(ids), addressed=True, direct=True)])  # warm up

            dm = [message(next(ids), addressed=True, direct=True) for _ in range(args.turns)]
            dm_trips, _ = await turns(app, channel, dm)
            print(f"turns in DMs, group context on for the alias: {dm_trips:.2f} trips/turn")

            db = app.store.db
            start = db.trips
            for _ in range(args.messages):
                await host.deliver(message(next(ids), addressed=False, user="eve"))
            kept_trips = (db.trips - start) / args.messages
            rows = await app.store.context_lines.count()
            print(
                f"{args.messages} group messages kept for context: {kept_trips:.2f} trips each;"
                f" context_lines rows {rows} (window {args.window}), answered: "
                f"{len(provider.requests) - args.turns - 1}"
            )

            asked = [message(next(ids), addressed=True) for _ in range(args.turns)]
            group_trips, _ = await turns(app, channel, asked)
            request = provider.requests[-1]
            with_block = request.messages[-1]
            print(f"turns in the group, group context on: {group_trips:.2f} trips/turn")
            text = "what do you think about the plan above?"
            print(
                f"model request's last message: {len(with_block.content)} characters,"
                f" ~{estimate_tokens(with_block)} tokens with {args.window} context lines;"
                f" {len(text)} characters without"
            )

        # the baseline: the same group turns with group context off
        with tempfile.TemporaryDirectory() as other:
            config = settings(Path(other), 0)
            channel = FakeChannel(CHANNEL)
            async with App(
                config, provider=provider, channels={str(CHANNEL): channel}, tools=[]
            ) as app:
                await channel.running.wait()
                await turns(app, channel, [message(0, addressed=True, direct=True)])
                off = [message(n, addressed=True) for n in range(1, args.turns + 1)]
                off_trips, _ = await turns(app, channel, off)
                dm = [
                    message(n, addressed=True, direct=True)
                    for n in range(10**6, 10**6 + args.turns)
                ]
                off_dm, _ = await turns(app, channel, dm)
        print(f"group context off: {off_trips:.2f} trips/turn in the group, {off_dm:.2f} in DMs")
        print(
            f"added by group context: {dm_trips - off_dm:+.2f} trips to a turn that does not use"
            f" it, {group_trips - off_trips:+.2f} to one that does"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--window", type=int, default=50)
    asyncio.run(main(parse_args(parser, smoke={"turns": 5, "messages": 20, "window": 5})))
