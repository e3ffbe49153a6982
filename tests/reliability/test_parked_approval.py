"""A pending approval outlives the daemon (docs/approvals.md, "Parking and resumption"),
against the real daemon process and each platform's fake (Telegram; Slack and Discord through
their client libraries, slack-bolt and discord.py).

A card is posted; the daemon is stopped with SIGTERM (in another case killed with
``kill -9``) and started again; the approver taps Approve on the **original** card (in the
other case, ``hatchway approvals approve ID`` runs in a process of its own): the tool runs
once, the answer arrives once, as the reply to the original message, and nobody is told to
ask again.

On Slack the tap after the restart is a ``block_actions`` envelope on the new process's
socket; on Discord an ``INTERACTION_CREATE`` on the new gateway session. The answer goes to
the original place: the Slack thread of the message (``thread_ts``; the DM answers in threads
here), the Discord reply to the message (``message_reference``). The card's edit after the
restart is ``chat.update`` / ``PATCH`` of its message: nothing the stopped process held (a
``response_url``, an interaction token) is used.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.gateway.recovery import SHUTDOWN_MESSAGE
from tests.fakes.openai_server import Reply
from tests.fakes.telegram_server import FakeTelegram, callback, message, private_chat, user
from tests.ops.daemon_process import WAIT_S, DaemonProcess, start_daemon
from tests.reliability.crash_rig import approval_table, daemon_env
from tests.reliability.crash_rig import write_config as write_platform_config
from tests.reliability.platform_drivers import (
    DiscordDriver,
    PlatformDriver,
    SlackDriver,
    TelegramDriver,
    driven,
)
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


async def approve_from_the_host(
    config: Path, approval_id: str, cwd: Path, env: Mapping[str, str] | None = None
) -> None:
    """``hatchway approvals approve ID`` in a process of its own, as the operator ``ops``,
    with the daemon's variables ``env``."""
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
        env={**os.environ, **(env or {}), "USER": "ops", "PYTHONPATH": str(ROOT)},
        cwd=str(cwd),
    )
    out, _ = await cli.communicate()
    assert cli.returncode == 0, out


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
        await approve_from_the_host(config, approval_id, tmp_path)
        await until_answered(tg)
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0
    check_once(tg, workspace, db)


# Slack and Discord ------------------------------------------------------------------------

ANSWER = "written after the approval"
Driver = SlackDriver | DiscordDriver


def platform_config(tmp_path: Path, driver: PlatformDriver, llm: RoutedOpenAI) -> Path:
    """The daemon's config where the person of conversation 1 is the only approver."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # on Slack, the answer has a thread to go to
    extra = "dm_replies_in_thread = true\n" if isinstance(driver, SlackDriver) else ""
    return write_platform_config(
        tmp_path / "hatchway.toml",
        llm_url=llm.base_url,
        tables=[approval_table(driver, [driver.person(1)], extra)],
        workspace=workspace,
        auto_approve=(),
    )


def card_stored(db: Path) -> bool:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT card_refs FROM approvals").fetchall()
    return bool(rows) and all(r[0] not in ("", "[]") for r in rows)


async def until_card_stored(db: Path) -> None:
    async with asyncio.timeout(WAIT_S):
        while not card_stored(db):  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def park_on(
    tmp_path: Path, driver: Driver, llm: RoutedOpenAI, *, kill: bool
) -> tuple[Path, str]:
    """A daemon posts a card for a file write in conversation 1, then stops (SIGTERM, or
    SIGKILL with ``kill``). Returns the config and the id of the person's message."""
    config = platform_config(tmp_path, driver, llm)
    llm.answer(
        "q-park",
        Reply(tool_calls=(("file_write", {"path": "out.txt", "content": "parked"}),)),
        Reply(text=ANSWER),
    )
    async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
        await daemon.wait_notify("READY", "1")
        await driver.connected()
        await driver.send(1, "q-park: write it")
        await driver.wait_card(1, WAIT_S)
        # the card's place is stored before the stop (killed between the post and that
        # write, the card is still decided by a tap, but nothing else can edit it)
        await until_card_stored(tmp_path / "hatchway.db")
        daemon.signal(signal.SIGKILL if kill else signal.SIGTERM)
        assert await daemon.wait_exit() == (-signal.SIGKILL if kill else 0)
    driver.went_down()
    if isinstance(driver, SlackDriver):
        [asked] = [p.event for p in driver.pushed]
        request = str(asked["event"]["ts"])  # type: ignore[index]
    else:
        [asked] = [
            m
            for m in driver.fake.messages.values()
            if str(m["content"]).endswith("q-park: write it")
        ]
        request = str(asked["id"])
    driver.card(1)  # still open: nothing expired it
    return config, request


@asynccontextmanager
async def restarted(config: Path, driver: Driver) -> AsyncIterator[DaemonProcess]:
    async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
        await daemon.wait_notify("READY", "1")
        await driver.connected()
        yield daemon
        daemon.signal(signal.SIGTERM)
        assert await daemon.wait_exit() == 0, daemon.events[-20:]


async def until_card_approved(driver: Driver, card: object) -> None:
    """The original card was edited in place (``chat.update`` / ``PATCH`` of its message) to
    show the approval."""
    if isinstance(driver, SlackDriver):
        channel, ts = card  # type: ignore[misc]
        await driver.fake.wait_for(
            "chat.update",
            where=lambda p: (
                p.get("channel") == channel and p.get("ts") == ts and "Approved" in str(p)
            ),
            wait_s=WAIT_S,
        )
    else:
        assert isinstance(card, dict)
        path = f"/channels/{card['channel_id']}/messages/{card['id']}"
        fake = driver.fake

        def edited() -> bool:
            return any(
                c.path == path and "Approved" in str(c.body)
                for c in fake.calls_to("PATCH", r"/channels/\d+/messages/\d+")
            )

        await fake.wait_until(edited, within=WAIT_S)


def check_once_on(driver: Driver, tmp_path: Path, request: str) -> None:
    """The tool ran once; the answer arrived once, in the original thread / as the reply to
    the original message; nobody was told to ask again."""
    if isinstance(driver, SlackDriver):
        posted = [c.params for c in driver.fake.calls_of("chat.postMessage")]
        [answer] = [p for p in posted if ANSWER in str(p.get("text"))]
        assert answer["channel"] == driver.dm(1)
        assert answer.get("thread_ts") == request
        texts = [str(p.get("text")) for p in posted]
        assert not [c for c in driver.fake.calls_of("chat.update") if "ask again" in str(c.params)]
    else:
        sent = driver.fake.calls_to("POST", r"/channels/\d+/messages")
        [answer_call] = [c for c in sent if ANSWER in str((c.body or {}).get("content"))]
        assert answer_call.path == f"/channels/{driver.room(1)}/messages"
        reference = (answer_call.body or {}).get("message_reference")
        assert isinstance(reference, dict)
        assert str(reference["message_id"]) == request
        texts = [str((c.body or {}).get("content")) for c in sent]
    assert SHUTDOWN_MESSAGE not in texts
    assert not [t for t in texts if "ask again" in t]
    [written] = files_named(tmp_path / "workspace", "out.txt")
    assert written.read_text(encoding="utf-8") == "parked"
    with sqlite3.connect(tmp_path / "hatchway.db") as conn:
        inbox = conn.execute("SELECT status FROM inbox").fetchall()
        parked = conn.execute("SELECT COUNT(*) FROM parked_turns").fetchone()
        calls = conn.execute(
            "SELECT COUNT(*) FROM tool_calls WHERE tool = 'file_write' AND status = 'executed'"
        ).fetchone()
    assert inbox == [("done",)]
    assert parked == (0,)
    assert calls == (1,)  # the tool ran once


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "kill-9"])
@pytest.mark.parametrize("name", ["slack", "discord"])
async def test_a_tap_on_the_original_card_after_a_restart_on(
    tmp_path: Path, llm: RoutedOpenAI, name: str, kill: bool
) -> None:
    async with driven(name) as driver:
        assert not isinstance(driver, TelegramDriver)
        config, request = await park_on(tmp_path, driver, llm, kill=kill)
        card = driver.card(1)
        async with restarted(config, driver):
            await driver.approve(1)
            await driver.wait_post(1, ANSWER, WAIT_S)
            await until_card_approved(driver, card)
        check_once_on(driver, tmp_path, request)


@pytest.mark.parametrize("name", ["slack", "discord"])
async def test_the_cli_approves_a_parked_card_after_a_kill_on(
    tmp_path: Path, llm: RoutedOpenAI, name: str
) -> None:
    async with driven(name) as driver:
        assert not isinstance(driver, TelegramDriver)
        config, request = await park_on(tmp_path, driver, llm, kill=True)
        card = driver.card(1)
        async with restarted(config, driver):
            [approval_id] = approval_ids(tmp_path / "hatchway.db")
            await approve_from_the_host(
                config, approval_id, tmp_path, daemon_env(driver.environment())
            )
            await driver.wait_post(1, ANSWER, WAIT_S)
            await until_card_approved(driver, card)
        check_once_on(driver, tmp_path, request)
