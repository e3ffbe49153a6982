"""End to end: a call a quorum rule matches needs two different approvers.

The daemon runs as a real process (``hatchway run``) against the fake Telegram and an
OpenAI-compatible fake. ``shell`` needs two approvals (``[approval.quorum]``); the requester
is an approver too (``self_approval = true``), so the card in their DM carries buttons, and
two more approvers get copies in their DMs (``dm_approvers``). The requester's own tap is
refused; the first approver's tap is counted (and their second counts nothing more), every
copy shows the count; the second approver's tap decides, the call runs once and the answer
arrives. The test waits on what the fake receives, never on a fixed sleep.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.openai_server import Reply
from tests.fakes.telegram_server import ApiCall, FakeTelegram, callback, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, write_config
from tests.reliability.platform_drivers import TELEGRAM_TOKEN, TelegramDriver
from tests.reliability.routed_llm import RoutedOpenAI

pytestmark = pytest.mark.long

REQUESTER = 5001  # conversation 1 of the driver: the requester's DM
FIRST = 5002
SECOND = 5003
NAMES = {REQUESTER: "Ann", FIRST: "Bea", SECOND: "Cal"}
QUORUM = """
[approval.quorum]
rules = [{ tools = ["shell"], approvals = 2 }]
"""


def _told(text: str) -> Callable[[ApiCall], bool]:
    return lambda call: call.params.get("text") == text


def _card_in(chat: int, needle: str) -> Callable[[ApiCall], bool]:
    def where(call: ApiCall) -> bool:
        return call.params.get("chat_id") == chat and needle in str(call.params.get("text", ""))

    return where


async def test_two_different_approvers_and_never_the_requester(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with FakeTelegram(TELEGRAM_TOKEN) as tg, RoutedOpenAI() as llm:
        driver = TelegramDriver(fake=tg)
        llm.answer(
            "q-shell",
            Reply(tool_calls=(("shell", {"command": "echo two keys"}),)),
            Reply(text="shell-answered"),
        )
        table = (
            driver.channel_table()
            + f'approvers = ["{REQUESTER}", "{FIRST}", "{SECOND}"]\n'
            + f"[channels.{driver.channel}.approval]\nself_approval = true\n"
        )
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[table],
            workspace=workspace,
            auto_approve=(),
        )
        text = config.read_text().replace("[approval]\n", "[approval]\ndm_approvers = true\n")
        config.write_text(text + QUORUM)

        def approve_on(chat: int) -> tuple[str, dict[str, object]]:
            [shown] = [m for m in tg.bot_messages(chat) if "reply_markup" in m]
            return shown["reply_markup"]["inline_keyboard"][0][0]["callback_data"], shown

        async def tap(query: str, who: int, chat: int, expected: str) -> None:
            data, shown = approve_on(chat)
            await tg.push(callback(query, user(who, NAMES[who]), data, shown))
            await tg.wait_for("answerCallbackQuery", _told(expected), wait_s=WAIT_S)

        async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.send(1, "q-shell: run it")
            for chat in (REQUESTER, FIRST, SECOND):
                await tg.wait_for("sendMessage", _card_in(chat, "0 of 2 approvals"), wait_s=WAIT_S)
            await tap("q-own", REQUESTER, REQUESTER, "You cannot approve your own request.")
            await tap("q-first", FIRST, FIRST, "Approval 1 of 2 recorded; waiting for one more.")
            for chat in (REQUESTER, FIRST, SECOND):  # every copy shows the count
                await tg.wait_for(
                    "editMessageText", _card_in(chat, "1 of 2 approvals: Bea ✓"), wait_s=WAIT_S
                )
            await tap(
                "q-again",
                FIRST,
                FIRST,
                "Your approval 1 of 2 recorded; waiting for one more (counted once).",
            )
            data, shown = approve_on(SECOND)
            await tg.push(callback("q-second", user(SECOND, NAMES[SECOND]), data, shown))
            await driver.wait_post(1, "shell-answered", WAIT_S)
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        rows = db.execute(
            "SELECT decision, decided_by, reason FROM audit WHERE tool = 'shell' ORDER BY id"
        ).fetchall()
        votes = db.execute("SELECT voter, position FROM approval_votes").fetchall()
    assert rows == [
        ("click_refused:approve", str(REQUESTER), "self_approval"),
        ("voted", str(FIRST), "click: approval 1 of 2"),
        ("voted", str(SECOND), "click: approval 2 of 2"),
        ("approved", str(SECOND), "click"),
    ]
    assert sorted(votes) == [(str(FIRST), 1), (str(SECOND), 2)]
