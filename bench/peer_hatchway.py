"""hatchway's side of ``bench/peers.py``: many conversations at once through the real
:class:`bot.app.App` — access policy, persisted inbox, gateway, agent loop, the built-in
tools, the OpenAI-compatible provider over loopback HTTP to the fake model, history on SQLite
— with the tests' in-process channel (:class:`tests.fakes.channel.FakeChannel`) in place of a
platform, as ``bench/throughput.py`` does.

``--conversations`` messages, each from its own DM, are delivered at once after
``--warmup`` that are not measured; a turn counts when its answer (the fake model's
:data:`bench.peer_model.ANSWER`, or its ``done: …`` after a tool result) is sent. Logging is
the daemon's default (``info``, JSON lines, here to /dev/null). Prints one JSON object.

    python bench/peer_hatchway.py --base-url URL [--conversations 100] [--warmup 10]
                                  [--text TEXT] [--workspace DIR]

With ``--smoke`` and no ``--base-url`` it starts the fake model itself (as ``bench/peers.py``
does).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import contextlib
import json
import os
import resource
import tempfile
import time

from bench.peer_model import ANSWER
from bench.peers import model_server
from bench.smoke import parse_args
from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.ops.daemon import settle_memory
from bot.ops.logs import configure_logging
from tests.fakes.channel import FakeChannel

CHANNEL = ChannelRef(kind="console", alias="main")


class Answers:
    """The answers sent so far, by conversation (fed by the channel's send hook)."""

    def __init__(self) -> None:
        self.by_conversation: dict[str, str] = {}
        self.expected = 0
        self.all_sent = asyncio.Event()

    def on_send(self, target: DeliveryTarget, text: str) -> None:
        if text != ANSWER and not text.startswith("done:"):
            return  # a progress line
        self.by_conversation[target.conversation_id] = text
        if len(self.by_conversation) >= self.expected:
            self.all_sent.set()

    def expect(self, n: int) -> None:
        self.by_conversation.clear()
        self.all_sent.clear()
        self.expected = n


def settings(state_dir: Path, base_url: str, workspace: Path) -> Settings:
    return parse_settings(
        {
            "state_dir": str(state_dir),
            "channels": {"console": {"main": {}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": base_url,
                    "model": "gpt-4o-mini",
                    "tool_mode": "native",
                }
            },
            "tools": {"workspace": {"path": str(workspace), "scope": "shared"}},
        },
        environ={},
    )


def envelope(label: str, n: int, text: str) -> IngressEnvelope:
    conversation = f"{label}{n}"
    return IngressEnvelope(
        channel=CHANNEL,
        message_id=f"m-{conversation}",
        conversation_id=conversation,
        sender=Sender(id=f"user{n}"),
        text=text,
        reply_target=DeliveryTarget(channel=CHANNEL, conversation_id=conversation),
        is_direct=True,
        addressed_to_bot=True,
    )


async def burst(channel: FakeChannel, answers: Answers, label: str, n: int, text: str) -> None:
    host = channel.host
    assert host is not None
    answers.expect(n)
    await asyncio.gather(*(host.deliver(envelope(label, i, text)) for i in range(n)))
    await asyncio.wait_for(answers.all_sent.wait(), timeout=600)
    channel.sent.clear()
    channel.text_edits.clear()


async def main(args: argparse.Namespace) -> dict[str, object]:
    answers = Answers()
    channel = FakeChannel(CHANNEL, on_send=answers.on_send)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(args.workspace or folder)
        async with App(
            settings(Path(folder), args.base_url, workspace), channels={"console.main": channel}
        ) as app:
            await channel.running.wait()
            if args.warmup:
                await burst(channel, answers, "w", args.warmup, args.text)
            settle_memory()  # as the daemon does after its warm-up
            cpu0 = time.process_time()
            started = time.perf_counter()
            await burst(channel, answers, "c", args.conversations, args.text)
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu0
            for _ in range(60_000):  # the last turns' "done" marks come after their replies
                if not app.gateway.active_turns:
                    break
                await asyncio.sleep(0.001)
    turns = len(answers.by_conversation)
    return {
        "turns": turns,
        "answers": sorted(set(answers.by_conversation.values())),
        "wall_s": wall,
        "turns_per_s": turns / wall,
        "cpu_ms_per_turn": cpu / turns * 1000,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the fake model's (required but with --smoke)")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--text", default="hello")
    parser.add_argument("--workspace", help="the file tools' folder (default: a temporary one)")
    arguments = parse_args(parser, smoke={"conversations": 10, "warmup": 2})
    if arguments.base_url is None and not arguments.smoke:
        parser.error("--base-url is required")
    with open(os.devnull, "w") as devnull, contextlib.ExitStack() as stack:
        configure_logging("info", "json", devnull)
        if arguments.base_url is None:
            arguments.base_url = stack.enter_context(model_server())
        print(json.dumps(asyncio.run(main(arguments))), flush=True)
