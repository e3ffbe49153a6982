"""The latency hatchway adds to a Telegram turn, measured against loopback fakes.

The real daemon (``hatchway run``, a subprocess with a fake ``NOTIFY_SOCKET``) polls a
loopback fake of the Telegram Bot API with the real ``python-telegram-bot`` client and asks
a loopback fake of the OpenAI API through the real ``openai`` SDK. Both fakes run in this
process, so their work does not compete with the daemon's event loop. For each turn a DM is
pushed (by default from a new user each time, so every turn starts a conversation; with
``--same-chat`` all in one DM, so the history sent to the model grows) and the answer awaited,
one turn at a time:

* delivered: the fake hands the update out in a ``getUpdates`` answer;
* replied: the fake receives the ``sendMessage`` carrying the answer;
* LLM: time spent inside the fake LLM's handler for that turn's requests.

hatchway's own latency is ``replied - delivered - LLM``: normalising the update, access
policy, inbox, session queue, history, the SDK request and response, rendering, the Bot API
request. With ``--tool`` each turn first makes one auto-approved tool call (``current_time``)
and so asks the model twice.

    python bench/e2e_telegram.py [--turns 200] [--tool] [--same-chat]

Target on a 2-core machine: p50 under 30 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import os
import signal
import tempfile
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from bench.machine import describe_machine, percentile
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import start_daemon

TOKEN = "616161:AAbench-token-for-the-fake-bot-api-abcdefg"
TOKEN_ENV = "BENCH_TELEGRAM_TOKEN"
REQUESTER = 4242
ANSWER = "Bench answer"


class TimedTelegram(FakeTelegram):
    """The Bot API fake, noting when each update is handed out and each answer arrives."""

    def __init__(self) -> None:
        super().__init__(TOKEN)
        self.delivered: dict[int, float] = {}
        self.replied: dict[str, float] = {}
        self.reply_arrived = asyncio.Event()

    async def _get_updates(self, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        updates = await super()._get_updates(params)
        now = time.monotonic()
        for update in updates:
            self.delivered.setdefault(int(update["update_id"]), now)
        return updates

    def _answer(self, method: str, params: Mapping[str, Any]) -> Any:
        text = str(params.get("text", ""))
        if method == "sendMessage" and text.startswith(ANSWER):
            self.replied.setdefault(text, time.monotonic())
            self.reply_arrived.set()
        return super()._answer(method, params)


class TimedOpenAI(OpenAIFake):
    """The OpenAI fake, adding up the time spent in its handler."""

    def __init__(self) -> None:
        super().__init__(model="gpt-4o-mini")
        self.busy_s = 0.0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        try:
            return await super()._handle(request)
        finally:
            self.busy_s += time.monotonic() - started


def write_config(folder: Path, tg: FakeTelegram, llm: OpenAIFake) -> Path:
    path = folder / "hatchway.toml"
    path.write_text(
        f"""
[agent]
system_prompt = "bench"

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
max_retries = 0

[channels.telegram.main]
token_env = "{TOKEN_ENV}"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
allowed_users = ["*"]

[logging]
level = "info"
format = "json"
""",
        encoding="utf-8",
    )
    return path


async def one_turn(
    tg: TimedTelegram, llm: TimedOpenAI, n: int, with_tool: bool, same_chat: bool
) -> float:
    """hatchway's share of one turn, in seconds."""
    person = REQUESTER if same_chat else REQUESTER + 1 + n
    answer = f"{ANSWER} {n}"
    if with_tool:
        llm.queue_tool_calls([("current_time", {})])
    llm.queue_text(answer)
    busy_before = llm.busy_s
    tg.reply_arrived.clear()
    update_id = await tg.push(
        {
            "message": message(
                private_chat(person), user(person), f"question {n}", message_id=10_000 + n
            )
        }
    )
    async with asyncio.timeout(60):
        while answer not in tg.replied:
            tg.reply_arrived.clear()
            await tg.reply_arrived.wait()
    llm_s = llm.busy_s - busy_before
    return tg.replied[answer] - tg.delivered[update_id] - llm_s


async def main(args: argparse.Namespace) -> None:
    print(describe_machine())
    os.environ[TOKEN_ENV] = TOKEN
    async with TimedTelegram() as tg, TimedOpenAI() as llm:
        with tempfile.TemporaryDirectory() as folder:
            config = write_config(Path(folder), tg, llm)
            async with start_daemon(config) as daemon:
                await daemon.wait_notify("READY", "1")
                for n in range(args.warmup):
                    await one_turn(tg, llm, args.turns + n, args.tool, args.same_chat)
                samples = [
                    await one_turn(tg, llm, n, args.tool, args.same_chat) for n in range(args.turns)
                ]
                daemon.signal(signal.SIGTERM)
                await daemon.wait_exit()
    ordered = sorted(s * 1000 for s in samples)
    kind = "1 tool call + answer (2 LLM requests)" if args.tool else "plain answer (1 LLM request)"
    chats = "all in one DM (history grows)" if args.same_chat else "each in a new DM"
    print(f"telegram DM turns, one at a time, {kind}, {chats}: n={len(ordered)}")
    print(
        f"hatchway's latency (update delivered -> answer sent, minus the fake LLM's time): "
        f"p50={percentile(ordered, 0.5):.1f} ms  p99={percentile(ordered, 0.99):.1f} ms  "
        f"min={ordered[0]:.1f} ms  max={ordered[-1]:.1f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--tool", action="store_true", help="one tool call per turn")
    parser.add_argument(
        "--same-chat",
        action="store_true",
        help="every turn in the same DM, so the history sent to the model grows",
    )
    asyncio.run(main(parser.parse_args()))
