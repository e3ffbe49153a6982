"""End to end on each platform: a ``file_edit`` card shows the diff, and an approved edit of a
file that changed after the card is refused with ``file changed``.

The daemon runs as a real process (``hatchway run``) against the platform's loopback fake and
an OpenAI-compatible fake. The model asks for a ``file_edit``; the card the platform receives
shows the unified diff against the file as it is. Someone else then changes the file; the
requester (an approver here, with ``self_approval``) approves on the card; the edit does not
run, the file keeps the other change, the model is told why, and the audit log has the
person's ``approved`` row and the runtime's ``auto_denied`` row with reason ``file changed``.

The card's text as each fake received it is also the one ``docs/approvals.md`` shows (its
blocks after ``<!-- diff card: PLATFORM -->``); this test keeps them equal (approval ids and
user ids aside, buttons left out: they are the same on every card).

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.fakes.openai_server import Reply
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.crash_rig import approval_table, daemon_env, write_config
from tests.reliability.platform_drivers import (
    PLATFORMS,
    DiscordDriver,
    PlatformDriver,
    SlackDriver,
    TelegramDriver,
    driven,
)
from tests.reliability.routed_llm import RoutedOpenAI

pytestmark = pytest.mark.long

DOC = Path(__file__).resolve().parents[2] / "docs" / "approvals.md"
BEFORE = "alpha\nbeta\ngamma\n"
SOMEONE_ELSE = "alpha\nbeta\ngamma\nsomeone else's line\n"
EDIT = {"path": "notes.txt", "old_text": "beta", "new_text": "BETA"}
DIFF = (
    "--- notes.txt (now)",
    "+++ notes.txt (after)",
    "@@ -1,3 +1,3 @@",
    " alpha",
    "-beta",
    "+BETA",
    " gamma",
)


def _normalised(text: str, requester: str) -> str:
    text = re.sub(r"\b[0-9a-f]{24}\b", "APPROVAL_ID", text)
    return text.replace(requester, "USER_ID")


async def _card(driver: PlatformDriver) -> str:
    """Wait for the card; its text as the platform received it (buttons left out)."""
    if isinstance(driver, TelegramDriver):
        chat = driver.chat(1)
        [sent] = await driver.fake.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == chat and "reply_markup" in c.params,
            wait_s=WAIT_S,
        )
        return str(sent.params["text"])
    if isinstance(driver, SlackDriver):
        [posted] = await driver.fake.wait_for(
            "chat.postMessage", where=lambda p: "blocks" in p, wait_s=WAIT_S
        )
        blocks = posted.params["blocks"]
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        shown = [b for b in blocks if b.get("type") != "actions"]
        return json.dumps(shown, indent=2, ensure_ascii=False)
    assert isinstance(driver, DiscordDriver)
    fake = driver.fake
    await fake.wait_until(
        lambda: any(m["components"] for m in fake.messages.values()), within=WAIT_S
    )
    [card] = [m for m in fake.messages.values() if m["components"]]
    return str(card["content"])


def doc_block(name: str) -> str:
    """The code block after ``<!-- diff card: NAME -->`` in docs/approvals.md."""
    found = re.search(
        rf"<!-- diff card: {name} -->\n(`{{3,}})\w*\n(.*?)\n\1\n",
        DOC.read_text(encoding="utf-8"),
        re.S,
    )
    assert found, f"docs/approvals.md has no diff card block for {name}"
    return found[2]


async def _answered(daemon: DaemonProcess, llm: RoutedOpenAI) -> str:
    """The tool result the model was given after the approval (the second request)."""
    await llm.wait_arrival("q-edit", count=2, wait_s=WAIT_S)
    messages = llm.requests[-1].body["messages"]
    assert isinstance(messages, list)
    [result] = [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
    return str(result["content"])


@pytest.mark.parametrize("name", PLATFORMS)
async def test_a_diff_card_and_a_file_changed_after_it(tmp_path: Path, name: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    target = workspace / "notes.txt"
    target.write_text(BEFORE, encoding="utf-8")
    async with driven(name) as driver, RoutedOpenAI() as llm:
        llm.answer("q-edit", Reply(tool_calls=(("file_edit", EDIT),)), Reply(text="edit-answered"))
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[approval_table(driver, [driver.person(1)])],
            workspace=workspace,
            auto_approve=(),
        )
        shared = f'path = "{workspace}"\n'  # the file is at the workspace's root
        config.write_text(config.read_text().replace(shared, shared + 'scope = "shared"\n'))
        async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(1, "q-edit: make beta loud")
            shown = await _card(driver)
            for line in DIFF:
                assert _escaped(line, name) in shown, (line, shown)
            # someone else changes the file while the card waits
            target.write_text(SOMEONE_ELSE, encoding="utf-8")
            await driver.approve(1)
            told = await _answered(daemon, llm)
            await driver.wait_post(1, "edit-answered", WAIT_S)
    assert told.startswith("Not executed: 'file_edit' was approved, but the file changed")
    assert target.read_text(encoding="utf-8") == SOMEONE_ELSE
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        rows = db.execute(
            "SELECT decision, decided_by, reason FROM audit WHERE tool = 'file_edit' ORDER BY id"
        ).fetchall()
    assert rows == [
        ("approved", driver.person(1), rows[0][2]),
        ("auto_denied", "runtime", "file changed"),
    ]
    shown = _normalised(shown, driver.person(1))
    assert shown == doc_block(name), shown


def _escaped(line: str, name: str) -> str:
    """How ``line`` appears in the platform's text (Telegram's is HTML)."""
    if name == "telegram":
        return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return line
