"""The latency hatchway adds to a Discord turn, measured against loopback fakes.

The real daemon (``hatchway run``, a subprocess with a fake ``NOTIFY_SOCKET``) connects with
the real ``discord.py`` to a loopback fake of Discord's gateway and REST API, and asks a
loopback fake of the OpenAI API through the real ``openai`` SDK. Both fakes run in this
process, so their work does not compete with the daemon's event loop. For each turn a DM
``MESSAGE_CREATE`` is dispatched (by default from a new user in a new DM channel each time,
so every turn starts a conversation; with ``--same-chat`` all in one DM, so the history sent
to the model grows) and the answer awaited, one turn at a time:

* delivered: the fake writes the ``MESSAGE_CREATE`` frame to the gateway socket;
* replied: the fake receives the ``POST /channels/{id}/messages`` carrying the answer;
* LLM: time spent inside the fake LLM's handler for that turn's requests.

hatchway's own latency is ``replied - delivered - LLM``: discord.py's gateway parsing and
dispatch, normalising, access policy, inbox, session queue, history, typing, the SDK request
and response, rendering, the REST request. With ``--tool`` each turn first makes one
auto-approved tool call (``current_time``) and so asks the model twice. The harness is
:mod:`bench.e2e_harness`.

    python bench/e2e_discord.py [--turns 200] [--tool] [--same-chat]

Target on a 2-core machine: p50 under 30 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import time
from collections.abc import Mapping
from typing import ClassVar

from bench.e2e_harness import REPLY_WAIT_S, Exchange, run_bench
from tests.fakes.discord_payloads import message_payload, user_payload
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord

TOKEN_ENV = "BENCH_DISCORD_TOKEN"
FIRST_DM = 820_000_000_000_000_000
FIRST_USER = 110_000_000_000_000_000
FIRST_MESSAGE = 970_000_000_000_000_000


class DiscordBench(FakeDiscord):
    """The Discord fake, with DMs from numbered users."""

    kind: ClassVar[str] = "discord"
    measured: ClassVar[str] = "MESSAGE_CREATE dispatched -> create-message request received"
    secrets: ClassVar[Mapping[str, str]] = {TOKEN_ENV: BOT_TOKEN}

    def channel_settings(self) -> Mapping[str, str | float]:
        return {
            "token_env": TOKEN_ENV,
            "api_base_url": self.base_url,
            "gateway_url": self.gateway_url,
            "guild_ready_timeout_s": 0.05,
        }

    async def exchange(self, *, person: int, message_no: int, text: str, answer: str) -> Exchange:
        dm = str(FIRST_DM + person)
        path = f"/channels/{dm}/messages"

        def answered() -> list[float]:
            return [
                c.at for c in self.calls_to("POST", path) if (c.body or {}).get("content") == answer
            ]

        payload = message_payload(
            id=str(FIRST_MESSAGE + message_no),
            channel_id=dm,
            author=user_payload(str(FIRST_USER + person), f"bench{person}"),
            content=text,
        )
        delivered = time.monotonic()
        await self.dispatch("MESSAGE_CREATE", payload)
        await self.wait_until(lambda: bool(answered()), within=REPLY_WAIT_S)
        return Exchange(delivered=delivered, replied=answered()[0])


if __name__ == "__main__":
    run_bench(__doc__, DiscordBench)
