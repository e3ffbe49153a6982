"""A pending approval outlives the daemon (docs/approvals.md, "Parking and resumption"),
against the real daemon process and the Telegram fake.

A card is posted; the daemon is stopped with SIGTERM (in another case killed with
``kill -9``) and started again; the approver taps Approve on the **original** card (in the
other case, ``hatchway approvals approve ID`` runs in a process of its own): the tool runs
once, the answer arrives once, as the reply to the original message, and nobody is told to
ask again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.gateway.recovery import SHUTDOWN_MESSAGE
from tests.fakes.telegram_server import FakeTelegram, callback, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.routed_llm import RoutedOpenAI
from tests.tools.workspace_files import files_named

pytestmark = pytest.mark.long

TOKEN = "616163:AAparked-approval-token-for-the-fake-api"
LLM_KEY = "zq7-parked-model-key-9c2d"
OWNER = 3004  # the only allowed user is the only approver (self_approval)
ROOT = Path(__file__).resolve().parents[2]


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
api_key_env = "PARKED_LLM_KEY"
max_retries = 0

[approval]
self_approval = true

[tools.workspace]
path = "{workspace}"

[channels.telegram.main]
token_env = "PARKED_TG_TOKEN"
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


def approval_ids(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [str(r[0]) for r in conn.execute("SELECT id FROM approvals")]


async def park_a_card(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, *, kill: bool
) -> tuple[Path, Path, dict[str, object]]:
    """A daemon posts a card for a file write, then stops (SIGTERM, or SIGKILL with
    ``kill``). Returns the config, the workspace and the card as Telegram shows it."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = write_config(tmp_path / "hatchway.toml", tg=tg, llm=llm, workspace=workspace)
    llm.route_tools("q-park", [("file_write", {"path": "out.txt", "content": "parked"})])
    llm.route_text("q-park", "written after the approval")
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        chat = private_chat(OWNER)
        await tg.push({"message": message(chat, user(OWNER), "q-park", message_id=7)})
        await tg.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == OWNER and "reply_markup" in c.params,
            wait_s=WAIT_S,
        )
        daemon.signal(signal.SIGKILL if kill else signal.SIGTERM)
        code = await daemon.wait_exit()
        assert code == (-signal.SIGKILL if kill else 0)
    [card] = [m for m in tg.bot_messages(OWNER) if m["text"].startswith("🔐 Approval needed")]
    assert "reply_markup" in card  # still open: nothing expired it
    return config, workspace, card


def answers(tg: FakeTelegram) -> list[dict[str, object]]:
    return [
        c.params
        for c in tg.calls_of("sendMessage")
        if "written after the approval" in str(c.params.get("text"))
    ]


async def until_answered(tg: FakeTelegram) -> None:
    async with asyncio.timeout(WAIT_S):
        while not answers(tg):  # noqa: ASYNC110
            await asyncio.sleep(0.05)


def check_once(tg: FakeTelegram, workspace: Path, db: Path) -> None:
    [answer] = answers(tg)  # once, in the conversation the message came from
    assert answer["chat_id"] == OWNER
    [written] = files_named(workspace, "out.txt")
    assert written.read_text(encoding="utf-8") == "parked"
    texts = [str(c.params.get("text")) for c in tg.calls_of("sendMessage")]
    assert SHUTDOWN_MESSAGE not in texts
    assert not [t for t in texts if "ask again" in t]
    with sqlite3.connect(db) as conn:
        inbox = conn.execute("SELECT status FROM inbox").fetchall()
        parked = conn.execute("SELECT COUNT(*) FROM parked_turns").fetchone()
        calls = conn.execute(
            "SELECT COUNT(*) FROM tool_calls WHERE tool = 'file_write' AND status = 'executed'"
        ).fetchone()
    assert inbox == [("done",)]
    assert parked == (0,)
    assert calls == (1,)  # the tool ran once


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill-9"])
async def test_a_tap_on_the_original_card_after_a_restart_runs_the_tool_once(
    tmp_path: Path,
    tg: FakeTelegram,
    llm: RoutedOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    kill: bool,
) -> None:
    monkeypatch.setenv("PARKED_TG_TOKEN", TOKEN)
    monkeypatch.setenv("PARKED_LLM_KEY", LLM_KEY)
    config, workspace, card = await park_a_card(tmp_path, tg, llm, kill=kill)
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        await tg.push(callback("q-tap", user(OWNER, "Owner"), approve, card))
        await until_answered(tg)
        # the original card shows the outcome (an edit of its message)
        await tg.wait_for(
            "editMessageText",
            lambda c: (
                c.params["message_id"] == card["message_id"] and "Approved" in str(c.params["text"])
            ),
            wait_s=WAIT_S,
        )
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    check_once(tg, workspace, tmp_path / "hatchway.db")


async def test_the_cli_approves_a_parked_card_after_a_kill(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARKED_TG_TOKEN", TOKEN)
    monkeypatch.setenv("PARKED_LLM_KEY", LLM_KEY)
    config, workspace, _card = await park_a_card(tmp_path, tg, llm, kill=True)
    db = tmp_path / "hatchway.db"
    async with start_daemon(config) as daemon:
        await daemon.wait_notify("READY", "1")
        [approval_id] = approval_ids(db)
        cli = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "approvals",
            "approve",
            approval_id,
            "--config",
            str(config),
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "USER": "ops", "PYTHONPATH": str(ROOT)},
            cwd=str(tmp_path),
        )
        out, _ = await cli.communicate()
        assert cli.returncode == 0, out
        await until_answered(tg)
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    check_once(tg, workspace, db)
