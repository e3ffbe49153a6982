"""End to end on each platform: an approver picks "for 1 h" on a card, and the next
identical call runs without a card, saying in its progress line which grant let it.

The daemon runs as a real process (``hatchway run``) against the platform's loopback fake and
an OpenAI-compatible fake. The model asks to run ``shell``; the requester (an approver here,
with ``self_approval``) picks "for 1 h" where the platform draws the grant choices (Telegram:
the card's second row; Slack: the select of the card's actions; Discord: the select menu);
the call runs and the answer arrives. Asked again for the same call, the daemon posts no
card: the call runs under the grant, and the audit says so. That the grant ends after the
hour is the core test's (:mod:`tests.approval.test_grant_choices`, on a manual clock). The
test waits on what the fakes receive, never on a fixed sleep.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.fakes.discord_payloads import select_interaction, user_payload
from tests.fakes.openai_server import Reply
from tests.fakes.telegram_server import callback, user
from tests.ops.daemon_process import WAIT_S, start_daemon
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

CALL = ("shell", {"command": "echo granted"})


def cards_posted(driver: PlatformDriver) -> int:
    """How many approval cards (messages with buttons) the platform received so far."""
    if isinstance(driver, TelegramDriver):
        return len([c for c in driver.fake.calls_of("sendMessage") if "reply_markup" in c.params])
    if isinstance(driver, SlackDriver):
        return len([m for m in driver.fake.messages.values() if m.get("blocks")])
    assert isinstance(driver, DiscordDriver)
    return len([m for m in driver.fake.messages.values() if m["components"]])


async def pick_one_hour(driver: PlatformDriver) -> None:
    """The requester picks "for 1 h" on the card, as the platform sends such a pick."""
    if isinstance(driver, TelegramDriver):
        chat = driver.chat(1)
        card = driver.card(1)
        [data] = [
            b["callback_data"]
            for row in card["reply_markup"]["inline_keyboard"]
            for b in row
            if b["text"] == "♾️ for 1 h"
        ]
        await driver.fake.push(callback("q-pick", user(chat), data, card))
        return
    if isinstance(driver, SlackDriver):
        dm, ts = driver.card(1)
        card = driver.fake.messages[dm, ts]
        [value] = [
            option["value"]
            for block in card["blocks"]
            if block.get("type") == "actions"
            for element in block["elements"]
            if element.get("type") == "static_select"
            for option in element["options"]
            if option["text"]["text"] == "for 1 h"
        ]
        picked = driver.fake.select(dm, ts, "hatchway_grant", value, user=driver.person(1))
        await driver.fake.wait_ack(await driver.fake.push("interactive", picked))
        return
    assert isinstance(driver, DiscordDriver)
    fake = driver.fake
    card = driver.card(1)
    [select] = [c for row in card["components"] for c in row["components"] if c["type"] == 3]
    [value] = [o["value"] for o in select["options"] if o["label"] == "for 1 h"]
    interaction_id = fake.new_id()
    payload = select_interaction(
        id=interaction_id,
        message=card,
        custom_id=select["custom_id"],
        values=[value],
        user=user_payload(driver.person(1), "u1"),
        guild_id=fake.guild_of(card["channel_id"]),
    )
    await fake.dispatch("INTERACTION_CREATE", payload)
    await fake.wait_for_call("POST", rf"/interactions/{interaction_id}/[^/]+/callback")


@pytest.mark.parametrize("name", PLATFORMS)
async def test_for_one_hour_lets_the_next_identical_call_run_without_a_card(
    tmp_path: Path, name: str
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with driven(name) as driver, RoutedOpenAI() as llm:
        llm.answer("q-first", Reply(tool_calls=(CALL,)), Reply(text="first-answered"))
        llm.answer("q-again", Reply(tool_calls=(CALL,)), Reply(text="again-answered"))
        table = approval_table(driver, [driver.person(1)])
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            tables=[table],
            workspace=workspace,
            auto_approve=(),
        )
        async with start_daemon(config, env=daemon_env(driver.environment())) as daemon:
            await daemon.wait_notify("READY", "1")
            await driver.connected()
            await driver.send(1, "q-first: run it")
            await driver.wait_card(1, WAIT_S)
            await pick_one_hour(driver)
            await driver.wait_post(1, "first-answered", WAIT_S)
            cards = cards_posted(driver)
            await driver.send(1, "q-again: run it again")
            await driver.wait_post(1, "again-answered", WAIT_S)
            assert cards_posted(driver) == cards  # no second card
    with sqlite3.connect(tmp_path / "hatchway.db") as db:
        rows = db.execute(
            "SELECT decision, decided_by, reason FROM audit WHERE tool = 'shell' ORDER BY id"
        ).fetchall()
        grants = db.execute("SELECT id, size, expires_at - created_at FROM grants").fetchall()
    [(grant_id, size, lasts)] = grants
    assert (size, lasts) == ("for 1 h", 3600)
    assert rows == [
        ("always", driver.person(1), "click"),
        ("policy_allowed", "runtime", f"policy: grant #{grant_id}"),
    ]
