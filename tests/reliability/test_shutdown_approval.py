"""SIGTERM while an approval card is pending, against the real daemon process, with parking
off (``approval.park = false``; parked turns: tests/approval/test_parking.py).

The card must not hold the drain: it is expired at once with the documented reason
``shutdown`` (approvals row, audit row, inbox row), its card is closed, the conversation is
told to ask again, the progress line does not stay at "waiting for approval", and the tool
never runs. The drain budget is set far beyond the test's wait, so a card that held it would
fail the test rather than merely slow it.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.agent.loop import SHUTDOWN_MESSAGE
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.routed_llm import RoutedOpenAI
from tests.tools.workspace_files import files_named

pytestmark = pytest.mark.slow

TOKEN = "616162:AAshutdown-approval-token-for-the-fake-api"
LLM_KEY = "zq7-shutdown-model-key-5e1f"
OWNER = 3003  # README's minimal setup: the only allowed user is the only approver


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake


def write_config(path: Path, *, tg: FakeTelegram, llm: RoutedOpenAI, workspace: Path) -> Path:
    path.write_text(
        f"""
[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "SHUTDOWN_LLM_KEY"
max_retries = 0

[approval]
timeout_s = 900
self_approval = true
park = false

[tools.workspace]
path = "{workspace}"

[channels.telegram.main]
token_env = "SHUTDOWN_TG_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
allowed_users = ["{OWNER}"]
approvers = ["{OWNER}"]

[logging]
format = "json"
""",
        encoding="utf-8",
    )
    return path


async def test_sigterm_expires_a_pending_card_at_once_and_says_why(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHUTDOWN_TG_TOKEN", TOKEN)
    monkeypatch.setenv("SHUTDOWN_LLM_KEY", LLM_KEY)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    db = tmp_path / "hatchway.db"
    config = write_config(tmp_path / "hatchway.toml", tg=tg, llm=llm, workspace=workspace)
    llm.route_tools("q-write", [("file_write", {"path": "out.txt", "content": "x"})])

    # drain budget far beyond WAIT_S: a card holding the drain would time the test out
    async with start_daemon(config, "--drain-timeout", str(WAIT_S * 5)) as daemon:
        await daemon.wait_notify("READY", "1")
        chat = private_chat(OWNER)
        await tg.push({"message": message(chat, user(OWNER), "q-write", message_id=7)})
        await tg.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == OWNER and "reply_markup" in c.params,
            wait_s=WAIT_S,
        )
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0

    texts = [str(c.params.get("text")) for c in tg.calls_of("sendMessage")]
    assert SHUTDOWN_MESSAGE in texts  # told to ask again, once
    assert texts.count(SHUTDOWN_MESSAGE) == 1
    assert "⏹ Stopped." not in texts
    closed = [c for c in tg.calls_of("editMessageText") if "Expired" in str(c.params["text"])]
    assert closed and "reply_markup" not in closed[-1].params  # the card shows it, no buttons
    assert "shutdown" in str(closed[-1].params["text"])
    # the progress message's last word is not "waiting for approval"
    progress = [
        str(c.params.get("text"))
        for c in tg.calls
        if c.method in ("sendMessage", "editMessageText")
        and str(c.params.get("text")).startswith(("⏳", "✅", "❌", "🔐", "🚫"))
    ]
    assert progress[0] == "🔐 waiting for approval: file_write", progress
    # closed as cut off by the stop, not as stopped by someone
    assert progress[-1] == (
        "🚫 file_write: not approved, not run\n⏹ interrupted: the bot is shutting down"
    ), progress
    assert not files_named(workspace, "out.txt")

    with sqlite3.connect(db) as conn:
        approvals = conn.execute("SELECT status, reason FROM approvals").fetchall()
        audit = conn.execute("SELECT decision, decided_by, reason FROM audit").fetchall()
        inbox = conn.execute("SELECT status, error FROM inbox").fetchall()
    assert approvals == [("expired", "shutdown")]
    assert audit == [("expired", "runtime", "shutdown")]
    assert inbox == [("failed", "shutdown")]
