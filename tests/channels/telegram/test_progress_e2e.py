"""End to end on Telegram (the whole daemon, python-telegram-bot, the loopback Bot API fake):
a command that exits 3 is shown as failed in the progress message, never ✅; after ``/stop``
the message is closed ("⏹ stopped"), not left at ``⏳ shell: …``. (A second ``/stop`` while
the first is finishing: tests/gateway/test_commands.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.agent.loop import CANCELLED_MESSAGE
from bot.app import App
from bot.gateway.commands import NOTHING_RUNNING
from tests.channels.progress_script import closed, running, script, with_shell
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, settings_for, started

pytestmark = pytest.mark.usefixtures("telegram_env")

WAIT_S = 60.0  # bounds a failure only


def progress_texts(tg: FakeTelegram) -> list[str]:
    return [str(m["text"]) for m in tg.bot_messages(REQUESTER)]


async def test_a_failed_command_and_a_stop_close_the_progress_message(
    tg: FakeTelegram, tmp_path: Path
) -> None:
    provider = script()
    app = App(with_shell(settings_for(tg, tmp_path)), provider=provider)
    async with app:
        await started(app)
        dm = private_chat(REQUESTER)
        ann = user(REQUESTER, "Ann")
        await tg.push({"message": message(dm, ann, "run them", message_id=10)})
        await tg.wait_for(
            "sendMessage",
            lambda _c: any(running(text) for text in progress_texts(tg)),
            wait_s=WAIT_S,
        )
        await tg.push({"message": message(dm, ann, "/stop", message_id=11)})
        await tg.wait_for(
            "sendMessage", lambda c: c.params.get("text") == CANCELLED_MESSAGE, wait_s=WAIT_S
        )
    texts = progress_texts(tg)
    [progress] = [text for text in texts if "shell" in text]
    assert closed(progress), progress
    assert NOTHING_RUNNING not in texts
    assert len(provider.requests) == 2
