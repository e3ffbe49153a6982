"""The database restarts under load: replicas report not-ready while it is down, recover, and
nothing is answered twice.

Two real daemons (``hatchway run``) over one PostgreSQL database (``tests/pg.py``) serve 30
people on Telegram (one replica polls, the lease); the model (``bench.crash_load.echo_rule``)
runs a ``shell`` command per message and answers it by its tag. Turns are held in flight
(the model does not answer them yet) while the server is stopped (``pg_ctl stop -m fast``:
every connection cut); they go on once the replicas report not-ready, so they meet the
database gone. More messages are sent while it is down, and it is started again.

While it is down every replica's ``/readyz`` answers 503 naming the database; once it is back
every replica is ready again, and the rest of the load and one last message per conversation
are answered. The turns held are those whose command ran (the model holds the request that
brings its result): their inbox entries are ``processing`` when the database goes, and the
server is started again only once each of them has met it gone. Then no message was
answered twice or both answered and told to ask again, no command ran twice, nobody got the
failure line, and every message was answered or its sender told to ask again: a turn that
met the database gone said nothing then, and was settled by the replica it ran on, still
alive, by recovery's rules once the database was back (the held ones by the notice: their
answer was never written); no inbox entry is left unsettled, and no replica restarted.

Marked ``long``: not in the default run (``python -m pytest -q -m long``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web

from bench.crash_load import RAN, echo_rule
from bench.crash_tally import Tally, answered_tags
from bot.gateway.sending import FAILURE_MESSAGE
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import FakeTelegram
from tests.ops.daemon_process import WAIT_S
from tests.pg import PgServer
from tests.reliability.crash_rig import daemon_env
from tests.reliability.platform_drivers import TELEGRAM_TOKEN, TelegramDriver
from tests.reliability.replica_load import Load
from tests.reliability.replica_rig import Fleet, until

pytestmark = pytest.mark.long

NAMES = ("r1", "r2")


class GatedModel(OpenAIFake):
    """The load's model (answering by :func:`bench.crash_load.echo_rule`), holding while
    :attr:`open` is clear every request that brings a tool's result: that turn's inbox entry
    is ``processing`` by then (its tool batch was recorded, and its command ran)."""

    def __init__(self) -> None:
        super().__init__(model="gpt-4o-mini")
        self.answer_with(echo_rule)
        self.open = asyncio.Event()
        self.open.set()
        self.waiting = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        messages = [m for m in body.get("messages", []) if isinstance(m, dict)]
        if not messages or messages[-1].get("role") != "tool":
            return await super()._handle(request)
        self.waiting += 1
        try:
            await self.open.wait()
        finally:
            self.waiting -= 1
        return await super()._handle(request)


CONVERSATIONS = 30
MESSAGES = 3


async def readiness(fleet: Fleet) -> dict[str, int]:
    return {name: (await fleet.readiness(name))[0] for name in NAMES}


async def wait_readiness(fleet: Fleet, status: int) -> None:
    """Until every replica's ``/readyz`` answers ``status``."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while (seen := await readiness(fleet)) != dict.fromkeys(NAMES, status):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"/readyz: {seen}, waiting for {status} from every replica")
        await asyncio.sleep(0.2)


def left_unsettled(fleet: Fleet) -> int:
    """Turns that met the database gone, on every replica's current run."""
    return sum(
        1
        for name in NAMES
        for event in fleet.replicas[name].daemon.events
        if event.get("event") == "turn_left_unsettled"
    )


async def test_a_database_restart_under_load(
    tmp_path: Path, pg_server: PgServer, pg_url: str
) -> None:
    async with FakeTelegram(TELEGRAM_TOKEN) as tg, GatedModel() as llm:
        driver = TelegramDriver(fake=tg)
        load = Load(driver, conversations=CONVERSATIONS, messages=MESSAGES)
        tally = Tally(platform="telegram", plan=load.plan)
        env = daemon_env(driver.environment())
        async with Fleet(
            tmp_path, url=pg_url, llm_url=llm.base_url, driver=driver, env=env
        ) as fleet:
            await asyncio.gather(*(fleet.start(name) for name in NAMES))
            await wait_readiness(fleet, 200)

            await load.send_share(1 / 6, gap_s=0.05)
            assert await until(lambda: len(answered_tags(driver)) >= 5, WAIT_S)
            llm.open.clear()  # the turns that ran their command now stay in flight
            await load.send_share(1 / 6, gap_s=0.05)
            assert await until(lambda: llm.waiting >= 2, WAIT_S)
            pg_server.stop("fast")
            try:
                await load.send_share(1 / 3, gap_s=0.05)  # sent while it is down
                await wait_readiness(fleet, 503)
                _, body = await fleet.readiness("r1")
                assert any("database" in problem for problem in body["problems"]), body
                held = llm.waiting
                llm.open.set()  # the turns in flight go on, and meet the database gone
                assert await until(lambda: left_unsettled(fleet) >= held, WAIT_S)
            finally:
                llm.open.set()
                pg_server.start()
            await wait_readiness(fleet, 200)

            await load.send_share(1.0, gap_s=0.05)
            assert await load.settle(tally, WAIT_S), tally.table()
            for name in NAMES:
                assert await fleet.stop(name) == 0, fleet.replicas[name].tail()
            tally.absorb(driver, await fleet.readout(), fleet.workspaces(), RAN)
            print(tally.table())

            assert tally.twice() == []
            assert tally.both() == []
            assert tally.ran_twice() == []
            assert tally.notices_unaccounted == 0
            assert tally.lost() == []
            # the turns held in flight were settled by the notice (their answer was never
            # written), by the replica they ran on
            assert len(tally.only_noticed()) >= held, tally.table()
            assert not [p for p in driver.posts() if FAILURE_MESSAGE in p.text]
            assert set(tally.inbox) <= {"done", "failed"}, tally.inbox
