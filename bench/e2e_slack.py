"""The latency hatchway adds to a Slack turn, measured against loopback fakes.

The real daemon (``hatchway run``, a subprocess with a fake ``NOTIFY_SOCKET``) connects in
Socket Mode with the real ``slack-bolt`` / ``slack_sdk`` to a loopback fake of Slack's Web API
and socket, and asks a loopback fake of the OpenAI API through the real ``openai`` SDK. Both
fakes run in this process, so their work does not compete with the daemon's event loop. For
each turn a DM ``message`` event is pushed (by default from a new user in a new DM each time,
so every turn starts a conversation and the user's display name is looked up once with
``users.info``; with ``--same-chat`` all in one DM, so the history sent to the model grows)
and the answer awaited, one turn at a time:

* delivered: the fake writes the ``events_api`` envelope to the socket;
* replied: the fake receives the ``chat.postMessage`` carrying the answer;
* LLM: time spent inside the fake LLM's handler for that turn's requests.

hatchway's own latency is ``replied - delivered - LLM``: the socket-mode ack and bolt's
dispatch, the inbound queue, the display-name lookup, normalising, access policy, inbox,
session queue, history, the SDK request and response, rendering, the Web API request. With
``--tool`` each turn first makes one auto-approved tool call (``current_time``) and so asks
the model twice. The harness is :mod:`bench.e2e_harness`.

    python bench/e2e_slack.py [--turns 200] [--tool] [--same-chat]

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
from tests.fakes.slack_server import FakeSlack, event_callback, message_event
from tests.fakes.slack_server import person as profile

BOT_TOKEN = "xoxb-6161-6161-bench-bot-token"
APP_TOKEN = "xapp-1-A0061-bench-app-token"
BOT_TOKEN_ENV = "BENCH_SLACK_BOT_TOKEN"
APP_TOKEN_ENV = "BENCH_SLACK_APP_TOKEN"


class SlackBench(FakeSlack):
    """The Slack fake, with DMs from numbered users (each one known to ``users.info``)."""

    kind: ClassVar[str] = "slack"
    measured: ClassVar[str] = "events_api envelope pushed -> chat.postMessage received"
    secrets: ClassVar[Mapping[str, str]] = {BOT_TOKEN_ENV: BOT_TOKEN, APP_TOKEN_ENV: APP_TOKEN}

    def __init__(self) -> None:
        super().__init__(BOT_TOKEN, APP_TOKEN)

    def channel_settings(self) -> Mapping[str, str | float]:
        return {
            "bot_token_env": BOT_TOKEN_ENV,
            "app_token_env": APP_TOKEN_ENV,
            "api_base_url": self.api_base_url,
        }

    async def exchange(self, *, person: int, message_no: int, text: str, answer: str) -> Exchange:
        sender, dm = f"UBENCH{person:06d}", f"DBENCH{person:06d}"
        self.users.setdefault(sender, profile(sender, f"Bench{person}"))
        event = message_event(text, user=sender, channel=dm, ts=f"1800000000.{message_no:06d}")
        delivered = time.monotonic()
        await self.push("events_api", event_callback(event))
        [sent] = await self.wait_for(
            "chat.postMessage",
            where=lambda params: params.get("channel") == dm and params.get("text") == answer,
            wait_s=REPLY_WAIT_S,
        )
        return Exchange(delivered=delivered, replied=sent.at)


if __name__ == "__main__":
    run_bench(__doc__, SlackBench)
