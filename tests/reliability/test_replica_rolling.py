"""A rolling restart of every replica under load: nothing lost, nothing answered twice, each
conversation's answers in the order of its messages.

Three real daemons over one PostgreSQL database (``tests/pg.py``), each with a state
directory of its own, serve 30 people who send three messages each at a steady pace (the
model, ``bench.crash_load.echo_model``, runs a ``shell`` command per message, then answers
it by its tag). Each replica in turn is stopped with SIGTERM (it must exit 0: a drain) and
started again, as a deploy does, while a quarter of the load is being sent; the next one is
stopped only once the restarted one is ready; the last quarter follows. On each platform as
it works with several replicas:

* Telegram: one replica polls at a time (a lease); a stop releases it and another replica
  takes it, polling from the stored offset.
* Slack (Socket Mode): every replica holds a connection and the fake spreads events over
  them (:class:`~tests.reliability.replica_load.SpreadSlackDriver`); an event sent over a
  socket that closed goes over another, one not acknowledged within 3 s is sent again over
  another socket, as Slack does. A stopping replica closes its socket, then hands what it
  received to the inbox before it leaves.
* Discord: one replica keeps the gateway session (a lease), the others send over REST; a
  stop closes the session and releases the lease, another replica connects and catches up
  from the channels' history on what was posted while no session was open (Discord replays
  nothing to a new session). Never more than one gateway socket at a time.

Then every message was answered exactly once (no notice: a drain finishes its turns), no
command ran twice, and each conversation's answers were posted in the order its messages
were sent, whichever replica ran them.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.crash_load import RAN, echo_model
from bench.crash_tally import Tally
from tests.ops.daemon_process import WAIT_S
from tests.reliability.crash_rig import daemon_env
from tests.reliability.platform_drivers import (
    DiscordDriver,
    PlatformDriver,
    TelegramDriver,
    driven,
)
from tests.reliability.replica_load import Load, SpreadSlackDriver
from tests.reliability.replica_rig import TELEGRAM_POLL, Fleet

pytestmark = pytest.mark.long

NAMES = ("r1", "r2", "r3")
CONVERSATIONS = 30
MESSAGES = 3


async def started(fleet: Fleet, driver: PlatformDriver, name: str) -> None:
    await fleet.start(name)
    if isinstance(driver, SpreadSlackDriver):
        await driver.wait_client(name, WAIT_S)


@pytest.mark.parametrize("platform_name", ["telegram", "slack", "discord"])
async def test_rolling_restart_under_load(tmp_path: Path, pg_url: str, platform_name: str) -> None:
    async with (
        driven(platform_name, conversations=CONVERSATIONS, slack=SpreadSlackDriver) as driver,
        echo_model() as llm,
    ):
        load = Load(driver, conversations=CONVERSATIONS, messages=MESSAGES)
        tally = Tally(platform=platform_name, plan=load.plan)
        env = daemon_env(driver.environment())
        async with Fleet(
            tmp_path, url=pg_url, llm_url=llm.base_url, driver=driver, env=env
        ) as fleet:
            await asyncio.gather(*(started(fleet, driver, name) for name in NAMES))
            share = 1 / (len(NAMES) + 1)
            for name in NAMES:
                # a share of the load is sent while the replica stops and starts again
                sending = asyncio.create_task(load.send_share(share, gap_s=0.1))
                await asyncio.sleep(0.5)
                assert await fleet.stop(name) == 0, fleet.replicas[name].tail()
                await started(fleet, driver, name)
                await sending
                tally.rounds.append(f"{name} restarted, {load.sent} messages sent")
            await load.send_share(1.0, gap_s=0.1)
            assert await load.settle(tally, WAIT_S), tally.table()
            if isinstance(driver, TelegramDriver):
                await fleet.wait_holder(TELEGRAM_POLL)
                assert driver.fake.poll_book.conflicts == []
            if isinstance(driver, DiscordDriver):
                # one gateway session at a time, and it moved between replicas
                assert driver.fake.most_sockets_at_once == 1
                assert len(set(driver.fake.identified_by)) > 1, driver.fake.identified_by
            for name in NAMES:
                assert await fleet.stop(name) == 0, fleet.replicas[name].tail()
            tally.absorb(driver, await fleet.readout(), fleet.workspaces(), RAN)
            print(tally.table())

            assert tally.lost() == []
            assert tally.twice() == []
            assert tally.only_noticed() == []
            assert tally.both() == []
            assert tally.ran_twice() == []
            assert load.out_of_order() == {}
