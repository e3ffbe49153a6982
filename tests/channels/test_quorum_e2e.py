"""End to end on each platform: a call a quorum rule matches needs two different approvers.

The daemon runs as a real process (``hatchway run``) against the platform's loopback fake and
an OpenAI-compatible fake. ``shell`` needs two approvals (``[approval.quorum]``); the
requester is an approver too (``self_approval = true``), so the card where they wrote carries
buttons, and two more approvers get copies in their DMs (``dm_approvers``; on Discord, where
the requester wrote in a guild channel, the requester gets one too). Each person presses
Approve on their own copy as the platform delivers a press (Telegram: a callback query; Slack:
``block_actions``; Discord: an ``INTERACTION_CREATE`` component interaction). The requester's
own press is refused; the first approver's press is counted (and their second counts nothing
more), every copy shows the count; the second approver's press decides, the call runs once
and the answer arrives. The test waits on what the fakes receive, never on a fixed sleep.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fakes.discord_full_views import press
from tests.fakes.discord_payloads import user_payload
from tests.fakes.openai_server import Reply
from tests.fakes.slack_members import dm_channel_of
from tests.fakes.slack_server import person
from tests.fakes.telegram_server import callback, user
from tests.ops.daemon_process import WAIT_S, start_daemon
from tests.reliability.crash_rig import daemon_env, write_config
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

#: The requester (conversation 1 of each driver), then the two other approvers.
PEOPLE = {
    "telegram": ("5001", "5002", "5003"),
    "slack": ("U000001", "U000002", "U000003"),
    "discord": ("100000000000000001", "100000000000000002", "100000000000000003"),
}
NAMES = ("Ann", "Bea", "Cal")
QUORUM = """
[approval.quorum]
rules = [{ tools = ["shell"], approvals = 2 }]
"""
COUNT = " of 2 approvals"  # on every copy of the card, from the start
MARKER = "two-keys-ran"  # what the command prints: the call ran once if the model got it once


@asynccontextmanager
async def platform(name: str) -> AsyncIterator[PlatformDriver]:
    """The platform's fake and driver, the fake knowing :data:`PEOPLE` by :data:`NAMES`."""
    async with driven(name) as driver:
        for who, shown in zip(PEOPLE[name], NAMES, strict=True):
            if isinstance(driver, SlackDriver):
                driver.fake.users[who] = person(who, shown)
            elif isinstance(driver, DiscordDriver):  # a user id is no channel
                driver.fake.people.users[who] = user_payload(who, shown)
        yield driver


def _copies(driver: PlatformDriver) -> dict[str, str]:
    """Every copy of the card (a message showing the count) as the platform shows it now:
    conversation → its text."""
    if isinstance(driver, TelegramDriver):
        texts = [
            (str(m["chat"]["id"]), str(m["text"]))
            for chat in (int(p) for p in PEOPLE["telegram"])
            for m in driver.fake.bot_messages(chat)
        ]
    elif isinstance(driver, SlackDriver):
        texts = [
            (room, m["text"] + "\n" + json.dumps(m.get("blocks") or [], ensure_ascii=False))
            for (room, _), m in driver.fake.messages.items()
        ]
    else:
        assert isinstance(driver, DiscordDriver)
        texts = [(m["channel_id"], str(m["content"])) for m in driver.fake.messages.values()]
    cards = [(room, text) for room, text in texts if COUNT in text]
    assert len({room for room, _ in cards}) == len(cards), cards  # one copy in each
    return dict(cards)


def _conversations(driver: PlatformDriver) -> set[str]:
    """Where a copy of the card goes: the requester's conversation and each approver's DM."""
    requester, first, second = PEOPLE[_name(driver)]
    if isinstance(driver, TelegramDriver):
        return {requester, first, second}
    if isinstance(driver, SlackDriver):
        return {driver.dm(1), dm_channel_of(first), dm_channel_of(second)}
    assert isinstance(driver, DiscordDriver)
    dms = {driver.fake.people.dm_of(who) for who in (requester, first, second)}
    return {driver.room(1), *(dm for dm in dms if dm is not None)}


def _name(driver: PlatformDriver) -> str:
    if isinstance(driver, TelegramDriver):
        return "telegram"
    return "slack" if isinstance(driver, SlackDriver) else "discord"


async def _until(driver: PlatformDriver, ok: Callable[[], bool]) -> None:
    """Wait until ``ok`` holds; re-checked after every call the fake answers."""
    if isinstance(driver, TelegramDriver):
        await driver.fake.wait_for("sendMessage", lambda _c: ok(), wait_s=WAIT_S)
    elif isinstance(driver, SlackDriver):
        await driver.fake.wait_for("chat.postMessage", where=lambda _p: ok(), wait_s=WAIT_S)
    else:
        assert isinstance(driver, DiscordDriver)
        await driver.fake.wait_until(ok, within=WAIT_S)


async def _every_copy_shows(driver: PlatformDriver, needle: str, copies: int) -> None:
    def shown() -> bool:
        now = _copies(driver)
        return len(now) == copies and all(needle in text for text in now.values())

    try:
        await _until(driver, shown)
    except TimeoutError:
        raise AssertionError((needle, _copies(driver))) from None
    assert set(_copies(driver)) == _conversations(driver)


async def _press(driver: PlatformDriver, who: int) -> str:
    """Person ``who`` (an index in PEOPLE) presses Approve on their own copy of the card;
    the private answer they were given, once it arrived ("" when the press is answered
    without one)."""
    name = _name(driver)
    presser = PEOPLE[name][who]
    if isinstance(driver, TelegramDriver):
        tg = driver.fake
        chat = int(presser)
        [shown] = [m for m in tg.bot_messages(chat) if "reply_markup" in m]
        data = shown["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        answered = len(tg.calls_of("answerCallbackQuery"))
        query = f"q-{answered}"
        await tg.push(callback(query, user(chat, NAMES[who]), data, shown))
        [*_, answer] = await tg.wait_for("answerCallbackQuery", count=answered + 1, wait_s=WAIT_S)
        assert answer.params.get("callback_query_id") == query
        return str(answer.params.get("text") or "")
    if isinstance(driver, SlackDriver):
        slack = driver.fake
        dm = driver.dm(1) if who == 0 else dm_channel_of(presser)
        [ts] = [
            ts
            for (room, ts), m in slack.messages.items()
            if room == dm and any(b.get("type") == "actions" for b in m.get("blocks") or [])
        ]
        told = len(slack.calls_of("chat.postEphemeral"))
        pressed = slack.press(dm, ts, "hatchway_approve", user=presser)
        await slack.wait_ack(await slack.push("interactive", pressed), wait_s=WAIT_S)
        if who == 2:  # the deciding press: the card's edit is the answer
            return ""
        [*_, ephemeral] = await slack.wait_for("chat.postEphemeral", count=told + 1, wait_s=WAIT_S)
        assert (ephemeral.params["channel"], ephemeral.params["user"]) == (dm, presser)
        return str(ephemeral.params["text"])
    assert isinstance(driver, DiscordDriver)
    fake = driver.fake
    room = driver.room(1) if who == 0 else fake.people.dm_of(presser)
    [card] = [m for m in fake.messages.values() if m["components"] and m["channel_id"] == room]
    interaction = await press(fake, card, "a", user_payload(presser, NAMES[who]))
    body = interaction.callback.body or {}
    data = body.get("data") or {}
    if body.get("type") == 4:
        assert data.get("flags", 0) & 64, body  # ephemeral: only the presser sees it
        return str(data["content"])
    return ""


@pytest.mark.parametrize("name", PLATFORMS)
async def test_two_different_approvers_and_never_the_requester(tmp_path: Path, name: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    requester, first, second = PEOPLE[name]
    async with platform(name) as driver, RoutedOpenAI() as llm:
        llm.answer(
            "q-shell",
            Reply(tool_calls=(("shell", {"command": f"echo {MARKER}"}),)),
            Reply(text="shell-answered"),
        )
        table = (
            driver.channel_table()
            + f'approvers = ["{requester}", "{first}", "{second}"]\n'
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
        # the requester's DM and the two approvers' DMs; on Discord the guild channel and
        # the three approvers' DMs (the requester is an approver writing in a group)
        copies = 4 if name == "discord" else 3
        async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(1, "q-shell: run it")
            await _every_copy_shows(driver, "0 of 2 approvals", copies)
            assert await _press(driver, 0) == "You cannot approve your own request."
            assert await _press(driver, 1) == "Approval 1 of 2 recorded; waiting for one more."
            await _every_copy_shows(driver, f"1 of 2 approvals: {NAMES[1]} ✓", copies)
            assert await _press(driver, 1) == (
                "Your approval 1 of 2 recorded; waiting for one more (counted once)."
            )
            await _press(driver, 2)
            await driver.wait_post(1, "shell-answered", WAIT_S)
            await _every_copy_shows(driver, "2 of 2 approvals", copies)
    ran = [
        m
        for r in llm.requests
        for m in r.body["messages"]
        if isinstance(m, dict) and m.get("role") == "tool" and MARKER in str(m.get("content"))
    ]
    assert len(ran) == 1  # the call ran exactly once
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        rows = db.execute(
            "SELECT decision, decided_by, reason FROM audit WHERE tool = 'shell' ORDER BY id"
        ).fetchall()
        votes = db.execute("SELECT voter, position FROM approval_votes").fetchall()
    assert rows == [
        ("click_refused:approve", requester, "self_approval"),
        ("voted", first, "click: approval 1 of 2"),
        ("voted", second, "click: approval 2 of 2"),
        ("approved", second, "click"),
    ]
    assert sorted(votes) == [(first, 1), (second, 2)]
