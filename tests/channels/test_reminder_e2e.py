"""End to end: the daemon's sweep reminds and escalates an unanswered card.

The daemon runs as a real process (``hatchway run``) against the fake Telegram and an
OpenAI-compatible fake, with a reminder one second and an escalation two seconds after the
card (the sweep looks every five seconds, on the machine's clock). The test waits on what the
fake receives — the reminder in the requester's chat, the escalated user's DM copy of the
card, the card edited to say it was escalated — never on a fixed sleep. The escalated user
then approves from their copy; the call runs once and the answer arrives.

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

REQUESTER = 5001  # conversation 1 of the driver: the requester's DM, and the approver
LEAD = 5002  # escalate_to: no member of that DM, so they get a copy of the card
SCHEDULE = f"""remind_after_s = 1
remind_max = 1
escalate_after_s = 2
escalate_to = ["{LEAD}"]
timeout_s = 600
"""


def _to(chat: int, needle: str, *, card: bool) -> Callable[[ApiCall], bool]:
    def where(call: ApiCall) -> bool:
        text = str(call.params.get("text", ""))
        return (
            call.params.get("chat_id") == chat
            and needle in text
            and (("reply_markup" in call.params) is card)
        )

    return where


async def test_the_sweep_reminds_and_escalates_an_unanswered_card(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with FakeTelegram(TELEGRAM_TOKEN) as tg, RoutedOpenAI() as llm:
        driver = TelegramDriver(fake=tg)
        llm.answer(
            "q-shell",
            Reply(tool_calls=(("shell", {"command": "echo reminded"}),)),
            Reply(text="shell-answered"),
        )
        table = (
            driver.channel_table()
            + f'approvers = ["{REQUESTER}"]\n'
            + f"[channels.{driver.channel}.approval]\nself_approval = true\n"
        )
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[table],
            workspace=workspace,
            auto_approve=(),
        )
        config.write_text(config.read_text().replace("[approval]\n", "[approval]\n" + SCHEDULE))
        async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.send(1, "q-shell: run it")
            [card] = await tg.wait_for(
                "sendMessage", _to(REQUESTER, "Approval needed", card=True), wait_s=WAIT_S
            )
            [reminder] = await tg.wait_for(
                "sendMessage", _to(REQUESTER, "Reminder 1/1", card=False), wait_s=WAIT_S
            )
            [copy] = await tg.wait_for(
                "sendMessage", _to(LEAD, f"Escalated to: {LEAD}", card=True), wait_s=WAIT_S
            )
            # the card in the requester's chat is edited to say so
            await tg.wait_for(
                "editMessageText", _to(REQUESTER, f"Escalated to: {LEAD}", card=True), wait_s=WAIT_S
            )
            # the escalated user approves from their own copy
            [shown] = [m for m in tg.bot_messages(LEAD) if "reply_markup" in m]
            data = shown["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            await tg.push(callback("q-lead", user(LEAD), data, shown))
            await driver.wait_post(1, "shell-answered", WAIT_S)
    assert "Asked in:" in str(copy.params["text"])
    assert "shell (asked by" in str(reminder.params["text"])
    assert "UTC" in str(reminder.params["text"])
    assert "Reminder" not in str(card.params["text"])
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        rows = db.execute(
            "SELECT decision, decided_by, reason FROM audit WHERE tool = 'shell' ORDER BY id"
        ).fetchall()
    # both may fall due in one sweep (it looks every 5 s): the escalation is sent first then
    assert sorted(r for r in rows if r[0] != "approved") == [
        ("escalated", "runtime", f"escalated to {LEAD}"),
        ("reminded", "runtime", "reminder 1 of 1"),
    ]
    assert [r[:2] for r in rows if r[0] == "approved"] == [("approved", str(LEAD))]
    # one reminder, once in each place a copy of the card was then (the lead's copy too when
    # the escalation came first), however many sweeps looked
    reminded = [
        c.params.get("chat_id")
        for c in tg.calls_of("sendMessage")
        if "Reminder" in c.params.get("text", "")
    ]
    assert sorted(reminded) in ([REQUESTER], [REQUESTER, LEAD])
