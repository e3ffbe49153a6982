"""The process resuming a parked turn is killed between running the tool and recording its
result (docs/approvals.md, "Parking and resumption"; crash point ``after_tool``), against the
real daemon process and each platform's fake.

A card for ``shell`` (not ``retry_safe``: each run appends a line to a file) is posted and the
daemon stopped, so the turn parks; the next daemon, started with ``HATCHWAY_CRASH_AT=after_tool``,
takes the tap on the original card, resumes the turn, runs the command and kills itself with
``SIGKILL`` before anything of its result is recorded. A third daemon parks the cut-off
resumption again and resumes it once more: the command is not run a second time (one line in
the file), its call is recorded once with its result unknown, the model is told so, and the
answer arrives once, as the reply to the original message; nobody is told to ask again.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.gateway.recovery import SHUTDOWN_MESSAGE
from tests.fakes.openai_server import Reply
from tests.fakes.telegram_server import FakeTelegram, callback, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, lines
from tests.reliability.crash_rig import write_config as write_platform_config
from tests.reliability.platform_drivers import TELEGRAM_TOKEN, PlatformDriver, TelegramDriver
from tests.reliability.routed_llm import RoutedOpenAI
from tests.reliability.test_parked_approval import (
    REQUESTER,
    SlackDriver,
    discord_card,
    platform,
    slack_card,
    tap_approve,
    until_card_stored,
)

pytestmark = pytest.mark.long

ANSWER = "the command may have run"
RAN = "ran.txt"


@pytest.fixture
async def llm() -> AsyncIterator[RoutedOpenAI]:
    async with RoutedOpenAI() as fake:
        yield fake


@asynccontextmanager
async def driven(name: str) -> AsyncIterator[PlatformDriver]:
    if name == "telegram":
        async with FakeTelegram(TELEGRAM_TOKEN) as fake:
            yield TelegramDriver(fake=fake)
    else:
        async with platform(name) as driver:
            yield driver


def requester(driver: PlatformDriver) -> str:
    if isinstance(driver, TelegramDriver):
        return str(driver.chat(1))
    return REQUESTER[driver.name]


def config_for(tmp_path: Path, driver: PlatformDriver, llm: RoutedOpenAI) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    table = driver.channel_table() + f'approvers = ["{requester(driver)}"]\n'
    if isinstance(driver, SlackDriver):
        table += "dm_replies_in_thread = true\n"
    table += f"[channels.{driver.channel}.approval]\nself_approval = true\n"
    return write_platform_config(
        tmp_path / "hatchway.toml",
        llm_url=llm.base_url,
        tables=[table],
        workspace=workspace,
        auto_approve=(),  # shell asks
    )


def telegram_card(driver: TelegramDriver) -> dict[str, object]:
    [card] = [
        m
        for m in driver.fake.bot_messages(driver.chat(1))
        if str(m["text"]).startswith("🔐 Approval needed")
    ]
    return card


async def tap(driver: PlatformDriver) -> None:
    """The approver taps Approve on the original card."""
    if isinstance(driver, TelegramDriver):
        card = telegram_card(driver)
        approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]  # type: ignore[index]
        who = user(driver.chat(1), "Owner")
        await driver.fake.push(callback("q-tap", who, approve, card))
    else:
        await tap_approve(driver)  # type: ignore[arg-type]


def posts(driver: PlatformDriver) -> list[str]:
    if isinstance(driver, TelegramDriver):
        return [p.text for p in driver.posts()]
    if isinstance(driver, SlackDriver):
        return [str(c.params.get("text")) for c in driver.fake.calls_of("chat.postMessage")]
    sent = driver.fake.calls_to("POST", r"/channels/\d+/messages")  # type: ignore[attr-defined]
    return [str((c.body or {}).get("content")) for c in sent]


async def until_card_posted(driver: PlatformDriver, db: Path) -> None:
    if isinstance(driver, TelegramDriver):
        await driver.fake.wait_for(
            "sendMessage",
            lambda c: c.params.get("chat_id") == driver.chat(1) and "reply_markup" in c.params,
            wait_s=WAIT_S,
        )
    elif isinstance(driver, SlackDriver):
        await driver.fake.wait_for(
            "chat.postMessage",
            where=lambda p: p.get("channel") == driver.dm(1) and "blocks" in p,
            wait_s=WAIT_S,
        )
    else:
        fake = driver.fake  # type: ignore[attr-defined]
        await fake.wait_until(
            lambda: any(m["components"] for m in fake.messages.values()), within=WAIT_S
        )
    await until_card_stored(db)


@pytest.mark.parametrize("name", ["telegram", "slack", "discord"])
async def test_a_resumer_killed_after_the_tool_ran_does_not_run_it_again(
    tmp_path: Path, llm: RoutedOpenAI, name: str
) -> None:
    db = tmp_path / "hatchway.db"
    async with driven(name) as driver:
        config = config_for(tmp_path, driver, llm)
        llm.answer(
            "q-cut",
            Reply(tool_calls=(("shell", {"command": f"echo run >> {RAN}"}),)),
            Reply(text=ANSWER),
        )
        env = daemon_env(driver.environment())
        # 1. the card is posted; a stop parks the turn
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(1, "q-cut: run it")
            await until_card_posted(driver, db)
            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        driver.went_down()
        card = (
            slack_card(driver)
            if isinstance(driver, SlackDriver)
            else telegram_card(driver)
            if isinstance(driver, TelegramDriver)
            else discord_card(driver)  # type: ignore[arg-type]
        )
        assert card

        # 2. the tap resumes the turn; the process dies right after the command ran
        crashing = daemon_env(driver.environment(), crash_at="after_tool")
        async with start_daemon(config, env=crashing) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await tap(driver)
            assert await daemon.wait_exit() == -signal.SIGKILL
        driver.went_down()
        assert len(lines(tmp_path / "workspace", RAN)) == 1

        # 3. the next start resumes it again: the command does not run again
        async with start_daemon(config, env=env) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.wait_post(1, ANSWER, WAIT_S)
            daemon.signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0

    assert len(lines(tmp_path / "workspace", RAN)) == 1  # ran once
    texts = posts(driver)
    assert [t for t in texts if ANSWER in t] == [ANSWER]  # answered once
    assert SHUTDOWN_MESSAGE not in texts
    assert not [t for t in texts if "ask again" in t]
    # the model was told that the call's result is unknown and that it was not run again
    told = [r.body for r in llm.requests if "Result unknown" in str(r.body)]
    assert len(told) == 1
    with sqlite3.connect(db) as conn:
        inbox = conn.execute("SELECT status FROM inbox").fetchall()
        parked = conn.execute("SELECT COUNT(*) FROM parked_turns").fetchone()
        calls = conn.execute(
            "SELECT status, observation FROM tool_calls WHERE tool = 'shell'"
        ).fetchall()
    assert inbox == [("done",)]
    assert parked == (0,)
    # one row for the call: not "executed" (its result was never seen), its result unknown
    [(status, observation)] = calls
    assert status == "interrupted"
    assert observation.startswith("Result unknown")
