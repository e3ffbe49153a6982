"""An approval card posted by one replica and clicked through another runs the tool once.

Two real daemons (``hatchway run``) over one PostgreSQL database (``tests/pg.py``), each with
a state directory of its own and a Socket Mode connection of its own to the Slack fake (the
fake tells their sockets and Web API calls apart). ``shell`` needs an approval here. A
mention in a channel reaches the first replica's socket; its turn asks for a ``shell``
command (``bench.crash_load.echo_model``) and posts the card. The approver's click is
delivered over the *other* replica's socket, as Slack may deliver it: that replica decides
the request and wakes the waiting one through the database, which runs the command once and
answers. A second click on the same card, through the first replica, runs nothing again.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.crash_load import RAN, echo_model
from tests.fakes.slack_server import FakeSlack
from tests.ops.daemon_process import WAIT_S
from tests.reliability.crash_rig import lines
from tests.reliability.platform_drivers import SLACK_APP_TOKEN, SLACK_BOT_TOKEN
from tests.reliability.replica_load import SpreadSlackDriver
from tests.reliability.replica_rig import approval_fleet

pytestmark = pytest.mark.long

APPROVER = "UADMIN"
ROOM = "C0100"
MENTION_TS = "1600000000.000100"


async def test_a_card_posted_by_one_replica_is_decided_through_the_other(
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

            pressed = slack.press(ROOM, card_ts, "hatchway_approve", user=APPROVER)
            # a second click on the card as it was shown (a client that had not refreshed)
            again = slack.press(ROOM, card_ts, "hatchway_approve", user=APPROVER)
            await slack.wait_ack(await slack.push("interactive", pressed, to="r2"))
            await slack.wait_for(
                "chat.postMessage",
                where=lambda p: "answer t1x" in str(p.get("text")),
                wait_s=WAIT_S,
            )

            # the same card clicked again, through the first replica: nothing runs again
            await slack.wait_ack(await slack.push("interactive", again, to="r1"))
            (told,) = await slack.wait_for("chat.postEphemeral", wait_s=WAIT_S)
            assert told.client == "r1" and told.params["user"] == APPROVER
            await asyncio.sleep(1.0)  # a second run would have begun by now; none may

            for name in ("r1", "r2"):
                assert await fleet.stop(name) == 0, fleet.replicas[name].tail()

            answers = [
                c
                for c in slack.calls_of("chat.postMessage")
                if "answer t1x" in str(c.params.get("text"))
            ]
            assert [c.client for c in answers] == ["r1"]
            # the command ran once, on the replica whose turn asked for it
            assert lines(fleet.replicas["r1"].workspace, RAN) == ["t1x"]
            assert lines(fleet.replicas["r2"].workspace, RAN) == []
            # the click that decided it was taken on the other replica
            assert any(e.get("event") == "approval_clicked" for e in fleet.events("r2"))
