"""A card posted by one replica that is then killed is approved through the other, on each
platform: the tool runs once and the answer arrives once, in the right thread (docs/
approvals.md, "Parking and resumption" and "Several replicas").

Two real daemons (``hatchway run``) over one PostgreSQL database. On Slack each has a Socket
Mode connection of its own to the fake (which tells their sockets and Web API calls apart);
``shell`` needs an approval. A mention in a channel reaches the first replica; its turn asks
for ``shell`` (``bench.crash_load.echo_model``) and posts the card, then the replica is
killed with ``kill -9`` while the turn waits on it. The approver's tap on that card reaches
the other replica's socket: it decides the card, adopts the dead replica's waiting turn once
its lease has run out (taking its session over), resumes it there, runs the command once and
answers once, in the mention's thread. Nobody is told to ask again. Telegram and Discord
deliver to the replica holding the poll or gateway lease: that one posts the card and is
killed, and the tap reaches the replica that takes the lease over.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.crash_load import RAN, echo_model
from bot.store import Store
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack
from tests.fakes.telegram_server import FakeTelegram
from tests.ops.daemon_process import WAIT_S
from tests.reliability.crash_rig import lines
from tests.reliability.platform_drivers import (
    SLACK_APP_TOKEN,
    SLACK_BOT_TOKEN,
    TELEGRAM_TOKEN,
    DiscordDriver,
    TelegramDriver,
)
from tests.reliability.replica_load import SpreadSlackDriver
from tests.reliability.replica_rig import TELEGRAM_POLL, approval_fleet

DISCORD_GATEWAY = "discord.main.gateway"

pytestmark = pytest.mark.long

APPROVER = "UADMIN"
ROOM = "C0100"
MENTION_TS = "1600000000.000100"


async def until_card_stored(pg_url: str) -> None:
    """Until the replica that posted the card stored where it is (a person taps it once it
    shows; killed before that write, the tap still decides, but nothing could edit it)."""
    store = await Store.open_postgres(pg_url, migrate=False, pool_size=1)
    try:
        async with asyncio.timeout(WAIT_S):
            while True:
                rows = await store.approvals.list()
                if rows and all(r.card_refs for r in rows):
                    return
                await asyncio.sleep(0.05)
    finally:
        await store.aclose()


async def test_a_slack_card_whose_replica_was_killed_is_approved_through_the_other(
    tmp_path: Path, pg_url: str
) -> None:
    async with FakeSlack(SLACK_BOT_TOKEN, SLACK_APP_TOKEN) as slack, echo_model() as llm:
        driver = SpreadSlackDriver(fake=slack)
        async with approval_fleet(
            tmp_path, url=pg_url, llm_url=llm.base_url, driver=driver, approvers=[APPROVER]
        ) as fleet:
            for name in ("r1", "r2"):
                await fleet.start(name)
                await driver.wait_client(name, WAIT_S)

            card, card_ts = await driver.mention_for_card(
                "load t1x", to="r1", channel=ROOM, ts=MENTION_TS, wait_s=WAIT_S
            )
            assert card.client == "r1"
            await until_card_stored(pg_url)

            # the replica that posted the card dies while its turn waits on it
            assert await fleet.kill("r1") < 0
            pressed = slack.press(ROOM, card_ts, "hatchway_approve", user=APPROVER)
            await slack.wait_ack(await slack.push("interactive", pressed, to="r2"))
            (answer,) = await slack.wait_for(
                "chat.postMessage",
                where=lambda p: str(p.get("text")).startswith("answer "),
                wait_s=WAIT_S,
            )
            # the original card shows the approval (chat.update of its message, by r2)
            await slack.wait_for(
                "chat.update",
                where=lambda p: p.get("ts") == card_ts and "Approved" in str(p),
                wait_s=WAIT_S,
            )
            assert await fleet.stop("r2") == 0, fleet.replicas["r2"].tail()

            # answered once, by the replica that was tapped, in the mention's thread
            assert answer.client == "r2"
            assert answer.params["channel"] == ROOM
            assert answer.params.get("thread_ts") == MENTION_TS == card.params.get("thread_ts")
            answers = [
                c
                for c in slack.calls_of("chat.postMessage")
                if str(c.params.get("text")).startswith("answer ")
            ]
            assert answers == [answer]
            texts = [str(c.params) for c in slack.calls_of("chat.postMessage")]
            assert not [t for t in texts if "ask again" in t]
            # the command ran once, on the replica that resumed the turn
            assert lines(fleet.replicas["r1"].workspace, RAN) == []
            assert lines(fleet.replicas["r2"].workspace, RAN) == ["t1x"]
            events = [e.get("event") for e in fleet.events("r2")]
            assert "parked_turns_adopted" in events
            assert "turn_resuming" in events


async def test_a_telegram_card_whose_replica_was_killed_is_approved_through_the_other(
    tmp_path: Path, pg_url: str
) -> None:
    """Telegram: the replica holding the poll lease admits the message and posts the card,
    and is killed; the other takes the poll lease over and receives the tap."""
    async with FakeTelegram(TELEGRAM_TOKEN) as tg, echo_model() as llm:
        driver = TelegramDriver(fake=tg)
        person = driver.chat(1)
        async with approval_fleet(
            tmp_path, url=pg_url, llm_url=llm.base_url, driver=driver, approvers=[person]
        ) as fleet:
            await asyncio.gather(fleet.start("r1"), fleet.start("r2"))
            poller = await fleet.wait_holder(TELEGRAM_POLL)
            await driver.send(1, "load t1x")
            (card,) = await tg.wait_for(
                "sendMessage",
                lambda c: c.params.get("chat_id") == person and "reply_markup" in c.params,
                wait_s=WAIT_S,
            )
            assert card.client == poller.name
            await until_card_stored(pg_url)
            shown = driver.card(1)

            assert await fleet.kill(poller.name) < 0
            survivor = await fleet.wait_holder(TELEGRAM_POLL)
            assert survivor.name != poller.name
            await driver.approve(1)
            (answer,) = await tg.wait_for(
                "sendMessage",
                lambda c: str(c.params.get("text")).startswith("answer "),
                wait_s=WAIT_S,
            )
            await tg.wait_for(
                "editMessageText",
                lambda c: (
                    c.params.get("message_id") == shown["message_id"]
                    and "Approved" in str(c.params.get("text"))
                ),
                wait_s=WAIT_S,
            )
            assert await fleet.stop(survivor.name) == 0, survivor.tail()

            assert answer.client == survivor.name
            assert answer.params["chat_id"] == person
            answers = [
                c
                for c in tg.calls_of("sendMessage")
                if str(c.params.get("text")).startswith("answer ")
            ]
            assert answers == [answer]
            texts = [str(c.params.get("text")) for c in tg.calls_of("sendMessage")]
            assert not [t for t in texts if "ask again" in t]
            assert lines(fleet.replicas[poller.name].workspace, RAN) == []
            assert lines(survivor.workspace, RAN) == ["t1x"]
            events = [e.get("event") for e in fleet.events(survivor.name)]
            assert "parked_turns_adopted" in events
            assert "turn_resuming" in events


async def test_a_discord_card_whose_replica_was_killed_is_approved_through_the_other(
    tmp_path: Path, pg_url: str
) -> None:
    """Discord: the replica holding the gateway lease receives the mention and posts the
    card, and is killed; the other takes the gateway over (a new session) and receives the
    tap's interaction."""
    async with FakeDiscord() as fake, echo_model() as llm:
        driver = DiscordDriver(fake=fake, conversations=2)
        person = driver.person(1)
        async with approval_fleet(
            tmp_path, url=pg_url, llm_url=llm.base_url, driver=driver, approvers=[person]
        ) as fleet:
            await asyncio.gather(fleet.start("r1"), fleet.start("r2"))
            await driver.connected()
            gateway = await fleet.wait_holder(DISCORD_GATEWAY)
            await driver.send(1, "load t1x")
            await driver.wait_card(1, WAIT_S)
            card = driver.card(1)
            [asked] = [m for m in fake.messages.values() if str(m["content"]).endswith("load t1x")]
            await until_card_stored(pg_url)

            driver.went_down()
            assert await fleet.kill(gateway.name) < 0
            survivor = await fleet.wait_holder(DISCORD_GATEWAY)
            assert survivor.name != gateway.name
            await driver.connected()
            await driver.approve(1)

            def answers() -> list[dict[str, object]]:
                return [
                    {"path": c.path, **(c.body or {})}
                    for c in fake.calls_to("POST", r"/channels/\d+/messages")
                    if str((c.body or {}).get("content")).startswith("answer ")
                ]

            await fake.wait_until(lambda: bool(answers()), within=WAIT_S)
            path = f"/channels/{card['channel_id']}/messages/{card['id']}"
            await fake.wait_until(
                lambda: any(
                    c.path == path and "Approved" in str(c.body)
                    for c in fake.calls_to("PATCH", r"/channels/\d+/messages/\d+")
                ),
                within=WAIT_S,
            )
            assert await fleet.stop(survivor.name) == 0, survivor.tail()

            # answered once, as the reply to the person's message in its channel
            [answer] = answers()
            assert answer["path"] == f"/channels/{driver.room(1)}/messages"
            reference = answer.get("message_reference")
            assert isinstance(reference, dict)
            assert str(reference["message_id"]) == str(asked["id"])
            texts = [p.text for p in driver.posts()]
            assert not [t for t in texts if "ask again" in t]
            assert lines(fleet.replicas[gateway.name].workspace, RAN) == []
            assert lines(survivor.workspace, RAN) == ["t1x"]
            events = [e.get("event") for e in fleet.events(survivor.name)]
            assert "parked_turns_adopted" in events
            assert "turn_resuming" in events
