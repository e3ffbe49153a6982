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
and so asks the model twice. The harness is :mod:`bench.e2e_harness`.

    python bench/e2e_telegram.py [--turns 200] [--tool] [--same-chat]

Target on a 2-core machine: p50 under 30 ms.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collections.abc import Mapping
from typing import ClassVar

from bench.e2e_harness import REPLY_WAIT_S, Exchange, run_bench
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user

TOKEN = "616161:AAbench-token-for-the-fake-bot-api-abcdefg"
TOKEN_ENV = "BENCH_TELEGRAM_TOKEN"
REQUESTER = 4242


class TelegramBench(FakeTelegram):
    """The Bot API fake (which notes when it hands each update out), driven by the harness."""

    kind: ClassVar[str] = "telegram"
    measured: ClassVar[str] = "update delivered -> answer sent"
    secrets: ClassVar[Mapping[str, str]] = {TOKEN_ENV: TOKEN}

    def __init__(self) -> None:
        super().__init__(TOKEN)

    def channel_settings(self) -> Mapping[str, str | float]:
        return {
            "token_env": TOKEN_ENV,
            "api_base_url": self.base_url,
            "file_base_url": self.file_base_url,
        }

    async def exchange(self, *, person: int, message_no: int, text: str, answer: str) -> Exchange:
        sender = REQUESTER + person
        update_id = await self.push(
            {
                "message": message(
                    private_chat(sender), user(sender), text, message_id=10_000 + message_no
                )
            }
        )
        [sent] = await self.wait_for(
            "sendMessage", lambda call: call.params.get("text") == answer, wait_s=REPLY_WAIT_S
        )
        return Exchange(delivered=self.handed_out[update_id], replied=sent.at)


if __name__ == "__main__":
    run_bench(__doc__, TelegramBench)
