"""Crash safety: ``kill -9`` the daemon while turns, a tool call and an approval are in flight.

The daemon runs as a real subprocess (``python -m bot.cli run``) with a Telegram channel that
long-polls the loopback Bot API fake in this process, and an OpenAI-compatible fake that answers
per conversation. The fake keeps confirmed updates (``forget_confirmed=False``), as Telegram
would when the confirming poll never reached it, so the restarted daemon could see them again.

Five messages in four chats are in these states when the daemon is killed:

* ``done``     answered before the kill;
* ``hold``     its model call is open (the turn is in the provider);
* ``queued``   behind ``hold`` in the same chat (admitted, never started);
* ``tool``     a ``shell`` command is running (it records its pid, then sleeps);
* ``approve``  a ``file_write`` waits for an approver's tap on its card.

After a restart on the same state directory: each message is answered exactly once or its
sender is told it failed, never both and never twice; the pending approval is expired with its
card edited, and a tap on the old card runs nothing; the shell command ran once; a new message
is answered; the database passes ``PRAGMA integrity_check``; and neither the bot token nor the
model key appears in the logs, the console output, the database or any text sent to the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from bot.gateway import SHUTDOWN_MESSAGE
from tests.fakes.telegram_server import (
    ApiCall,
    FakeTelegram,
    bot_message,
    callback,
    message,
    private_chat,
    user,
)
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.routed_llm import RoutedOpenAI
from tests.tools.workspace_files import files_named

pytestmark = pytest.mark.slow

T = TypeVar("T")

TOKEN = "616161:AAcrash-safety-token-for-the-fake-bot-api-xyz"
LLM_KEY = "zq7-reliability-model-key-0d9c1b"  # no known key shape: only registration masks it
APPROVER = 2002
CHATS = {"done": 1001, "hold": 1002, "queued": 1002, "tool": 1003, "approve": 1004}


def write_config(path: Path, *, tg: FakeTelegram, llm: RoutedOpenAI, workspace: Path) -> Path:
    users = ", ".join(f'"{c}"' for c in sorted(set(CHATS.values())))
    path.write_text(
        f"""
[agent]
system_prompt = "test"
turn_timeout_s = 600

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o-mini"
api_key_env = "RELIABILITY_LLM_KEY"
max_retries = 0
timeout_s = 600

[approval]
timeout_s = 600
park = false
auto_approve = ["shell"]
# the requests come from DMs the approver is not in: a copy of the card reaches them
dm_approvers = true

[tools.workspace]
path = "{workspace}"

# The test follows the command by its pid in a file outside the workspace: without the
# sandbox, whose PID namespace and private /tmp would hide both.
[tools.shell]
sandbox = "none"

[channels.telegram.main]
token_env = "RELIABILITY_TG_TOKEN"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
poll_timeout_s = 1
reconnect_initial_s = 0.05
reconnect_max_s = 0.5
allowed_users = [{users}]
approvers = ["{APPROVER}"]

[logging]
level = "debug"
format = "json"
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TOKEN, forget_confirmed=False) as fake:
        yield fake


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake


def texts_to(tg: FakeTelegram, chat: int) -> list[str]:
    return [
        str(c.params.get("text")) for c in tg.calls_of("sendMessage") if c.params["chat_id"] == chat
    ]


def is_card(chat: int) -> Callable[[ApiCall], bool]:
    return lambda c: c.params.get("chat_id") == chat and "reply_markup" in c.params


async def push_text(tg: FakeTelegram, chat: int, text: str, message_id: int) -> None:
    await tg.push({"message": message(private_chat(chat), user(chat), text, message_id=message_id)})


def file_text(path: Path) -> str:
    return path.read_text().strip() if path.exists() else ""


async def poll(check: Callable[[], T | None], what: str) -> T:
    """Poll a file written by another process (no event to wait on) for up to ``WAIT_S``."""
    for _ in range(int(WAIT_S / 0.05)):
        found = check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def test_kill_9_mid_flight_loses_nothing_and_repeats_nothing(
    tmp_path: Path, tg: FakeTelegram, llm: RoutedOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELIABILITY_TG_TOKEN", TOKEN)
    monkeypatch.setenv("RELIABILITY_LLM_KEY", LLM_KEY)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    ran = tmp_path / "shell-ran.txt"
    db = tmp_path / "hatchway.db"
    config = write_config(tmp_path / "hatchway.toml", tg=tg, llm=llm, workspace=workspace)

    llm.route_text("q-done", "A-done")
    llm.route_hang("q-hold")
    llm.route_text("q-queued", "A-queued")
    llm.route_tools("q-tool", [("shell", {"command": f"echo $$ >> {ran}; exec sleep 300"})])
    llm.route_tools("q-approve", [("file_write", {"path": "out.txt", "content": "x"})])
    llm.route_text("q-after", "A-after")

    shell_pid: int | None = None
    logs: list[str] = []
    try:
        async with start_daemon(config) as first:
            await first.wait_notify("READY", "1")
            await push_text(tg, CHATS["done"], "q-done", 1)
            await tg.wait_for(
                "sendMessage", lambda c: c.params.get("text") == "A-done", wait_s=WAIT_S
            )
            await push_text(tg, CHATS["hold"], "q-hold", 2)
            await llm.wait_arrival("q-hold")
            await push_text(tg, CHATS["queued"], "q-queued", 3)
            await push_text(tg, CHATS["tool"], "q-tool", 4)
            shell_pid = int(await poll(lambda: file_text(ran), "the shell command"))
            await push_text(tg, CHATS["approve"], "q-approve", 5)
            # the requester's DM gets a line that it waits; the card goes to the approver's DM
            [card] = await tg.wait_for("sendMessage", is_card(APPROVER), wait_s=WAIT_S)
            await wait_admitted(first, "q-queued")
            card_id = await poll(lambda: card_message_id(db), "the card's reference")
            first.proc.kill()  # SIGKILL: no drain, no cleanup
            assert await first.wait_exit() == -signal.SIGKILL
            logs += [str(e) for e in first.events] + first.stdout
        assert llm.arrivals["q-queued"] == 0  # it never started before the kill
        sent_before = len(tg.calls)

        async with start_daemon(config) as second:
            await second.wait_notify("READY", "1")
            await tg.wait_for(
                "sendMessage", lambda c: c.params.get("text") == "A-queued", wait_s=WAIT_S
            )
            for key in ("hold", "tool", "approve"):
                await tg.wait_for(
                    "sendMessage",
                    lambda c, chat=CHATS[key]: (
                        c.params["chat_id"] == chat and c.params.get("text") == SHUTDOWN_MESSAGE
                    ),
                    wait_s=WAIT_S,
                )
            await tg.wait_for(
                "editMessageText",
                lambda c: c.params.get("message_id") == card_id and "reply_markup" not in c.params,
                wait_s=WAIT_S,
            )
            # a tap on the card from before the restart changes nothing
            data = card.params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            chat = private_chat(APPROVER)
            await tg.push(
                callback("q-late", user(APPROVER, "Boss"), data, bot_message(chat, card_id))
            )
            await tg.wait_for(
                "answerCallbackQuery",
                lambda c: c.params.get("callback_query_id") == "q-late",
                wait_s=WAIT_S,
            )
            await push_text(tg, CHATS["done"], "q-after", 6)
            await tg.wait_for(
                "sendMessage", lambda c: c.params.get("text") == "A-after", wait_s=WAIT_S
            )
            second.signal(signal.SIGTERM)
            assert await second.wait_exit() == 0
            logs += [str(e) for e in second.events] + second.stdout
    finally:
        if shell_pid is not None:
            kill_quietly(shell_pid)

    # -- every message answered exactly once, or told it failed ---------------------------
    answers = {
        "done": "A-done",
        "queued": "A-queued",
    }
    done_chat, hold_chat = texts_to(tg, CHATS["done"]), texts_to(tg, CHATS["hold"])
    assert done_chat.count("A-done") == 1 and done_chat.count("A-after") == 1
    assert SHUTDOWN_MESSAGE not in done_chat
    assert hold_chat.count(answers["queued"]) == 1
    assert hold_chat.count(SHUTDOWN_MESSAGE) == 1  # for "hold" only: "queued" was answered
    for key in ("tool", "approve"):
        chat_texts = texts_to(tg, CHATS[key])
        assert chat_texts.count(SHUTDOWN_MESSAGE) == 1, (key, chat_texts)
    assert llm.arrivals["q-done"] == 1 and llm.arrivals["q-queued"] == 1
    assert llm.arrivals["q-tool"] == 1 and llm.arrivals["q-approve"] == 1
    assert not [c for c in tg.calls[sent_before:] if "A-done" in str(c.params.get("text"))]

    # -- no tool ran twice; the unapproved write never ran --------------------------------
    assert ran.read_text().split() == [str(shell_pid)]
    assert not files_named(workspace, "out.txt")

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        statuses = dict(conn.execute("SELECT message_id, status FROM inbox").fetchall())
        approvals = conn.execute("SELECT status FROM approvals").fetchall()
        dump = "\n".join(conn.iterdump())
    assert sorted(statuses.values()) == ["done", "done", "done", "failed", "failed", "failed"]
    assert approvals == [("expired",)]

    # -- secrets never written anywhere ---------------------------------------------------
    chat_text = "\n".join(str(c.params.get("text", "")) for c in tg.calls)
    for secret in (TOKEN, LLM_KEY, TOKEN.split(":")[1]):
        assert secret not in dump
        assert secret not in chat_text
        assert not [line for line in logs if secret in line]


async def wait_admitted(daemon: DaemonProcess, text: str) -> None:
    """The daemon logged ``envelope_queued`` for the message carrying ``text``."""
    await daemon.wait_until(
        lambda: sum(1 for e in daemon.events if e.get("event") == "envelope_queued") >= 5,
        f"{text} admitted",
    )


def card_message_id(db: Path) -> int | None:
    """The platform message id of the pending approval's card, once the store recorded it."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, card_refs FROM approvals").fetchall()
    refs = [json.loads(r) for status, r in rows if status == "pending"]
    return int(str(refs[0][0]["message_id"]).split(":")[-1]) if refs and refs[0] else None
