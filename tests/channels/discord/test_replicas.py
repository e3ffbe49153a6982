"""Two Discord adapters over one store, as two replicas: the real discord.py against the
loopback fake, each replica with a lease keeper of its own over one SQLite file or one
PostgreSQL database.

Only the replica holding ``discord.main.gateway`` keeps a gateway session (the fake counts
the gateway sockets open at once: Discord would send every event to each); both send over
REST. When the holder dies the other connects and catches up, from the last-seen rows in the
store, on what was posted meanwhile; when the holder cannot renew its lease it closes its
session before the other connects."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web

from bot.config.replicas import ReplicasConfig
from bot.envelope import DeliveryTarget
from bot.replicas import LeaseKeeper
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import BOT, BOT_ID, GENERAL, make_channel, said
from tests.fakes.recording_host import RecordingHost
from tests.replicas.waiting import eventually, eventually_async
from tests.sqlite_template import copy_migrated

pytestmark = pytest.mark.usefixtures("discord_env")

#: Short leases; a holder stops 0.7 s after its last renewal, 0.8 s before the lease ends,
#: time enough to close its gateway socket on a loaded machine.
QUICK = ReplicasConfig(heartbeat_s=0.1, lease_ttl_s=1.5, max_clock_skew_s=0.8)
ROLE = "discord.main.gateway"


@dataclass
class DiscordReplica:
    name: str
    store: Store
    keeper_store: Store
    keeper: LeaseKeeper
    channel: DiscordChannel
    host: RecordingHost
    tasks: tuple[asyncio.Task[None], ...] = ()

    async def start(self) -> None:
        await self.keeper.join()
        self.tasks = (
            asyncio.create_task(self.keeper.run()),
            asyncio.create_task(self.channel.run(self.host)),
        )

    def texts(self) -> list[str]:
        return [envelope.text for envelope in self.host.envelopes]

    def on_standby(self) -> bool:
        return self.channel.health.detail.startswith("standby, no gateway session")

    async def stop_tasks(self) -> None:
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def die(self) -> None:
        """As a kill -9: nothing more reaches the database, then its tasks end (its socket
        closes, as the system closes a dead process's)."""
        await self.keeper_store.aclose()
        await self.store.aclose()
        await self.stop_tasks()


@pytest.fixture(params=["sqlite", "postgres"])
async def pair(
    request: pytest.FixtureRequest, fake: FakeDiscord, tmp_path: Path
) -> AsyncIterator[list[DiscordReplica]]:
    if request.param == "sqlite":

        async def open_store() -> Store:
            return await Store.open(tmp_path / "shared.db")

    else:
        url = request.getfixturevalue("pg_url")

        async def open_store() -> Store:
            return await Store.open_postgres(url, pool_size=2)

    made: list[DiscordReplica] = []
    for name in ("A", "B"):
        store = await open_store()
        keeper_store = await open_store()
        keeper = LeaseKeeper(keeper_store.replicas, QUICK)
        channel = make_channel(fake, store, gateway_url=fake.gateway_url_for(name))
        made.append(
            DiscordReplica(
                name, store, keeper_store, keeper, channel, RecordingHost(replica=keeper)
            )
        )
    for replica in made:
        await replica.start()
    try:
        yield made
    finally:
        for replica in made:
            await replica.stop_tasks()
            await replica.store.aclose()
            await replica.keeper_store.aclose()


def mention(fake: FakeDiscord, text: str) -> JSON:
    return said(fake, f"<@{BOT_ID}> {text}", mentions=[BOT])


async def connected(fake: FakeDiscord, pair: list[DiscordReplica]) -> DiscordReplica:
    """The replica with the gateway session, once it has one and the other is on standby.
    Not necessarily the first to identify: a loaded start may miss its renewals for the
    fence (0.7 s) and hand the lease to the other, which is what fencing is for."""
    found: list[DiscordReplica] = []

    def settled() -> bool:
        for leader in pair:
            other = next(r for r in pair if r is not leader)
            if (
                fake.identified_by[-1:] == [leader.name]
                and "connected as" in leader.channel.health.detail
                and other.on_standby()
            ):
                found[:] = [leader]
                return True
        return False

    await eventually(settled)
    return found[0]


async def test_one_gateway_session_and_a_dead_holder_replaced_with_a_catch_up(
    fake: FakeDiscord, pair: list[DiscordReplica]
) -> None:
    leader = await connected(fake, pair)
    follower = next(r for r in pair if r is not leader)
    seen = mention(fake, "live")
    await fake.dispatch("MESSAGE_CREATE", seen)
    await leader.host.wait_envelopes(1)

    # sending needs no session: the standby posts over REST
    target = DeliveryTarget(channel=follower.channel.ref, conversation_id=GENERAL)
    await follower.channel.send(target, "from the standby")
    assert "from the standby" in fake.posted(GENERAL)

    async def row_written() -> bool:
        # at the live message or past it: a catch-up that ran after the standby's post (a
        # session begun again, when a loaded start lost the lease once) passes over the
        # bot's own message, and the row says so
        value = await follower.store.channel_state.get("discord.main", f"last_seen:{GENERAL}")
        return value is not None and int(value) >= int(seen["id"])

    await eventually_async(row_written)  # what the next holder will start from
    await leader.die()
    away = [mention(fake, "while nobody listens"), said(fake, "chatter")]
    for message in away:
        await fake.post(message)  # no session: only in the channel's history
    await eventually(lambda: len(follower.host.envelopes) == 2)

    assert leader.texts() == ["live"]
    assert follower.texts() == ["while nobody listens", "chatter"]
    assert fake.identified_by[-2:] == [leader.name, follower.name]
    assert fake.most_sockets_at_once == 1
    assert follower.keeper.held() == [ROLE]


async def test_a_holder_that_cannot_renew_closes_its_session_before_the_other_connects(
    fake: FakeDiscord, pair: list[DiscordReplica]
) -> None:
    leader = await connected(fake, pair)
    follower = next(r for r in pair if r is not leader)
    identified = len(fake.identified_by)
    await leader.keeper_store.aclose()  # its heartbeats fail from now on; the adapter runs on
    await eventually(lambda: len(fake.identified_by) == identified + 1)
    await eventually(lambda: "connected as" in follower.channel.health.detail)
    await fake.dispatch("MESSAGE_CREATE", mention(fake, "after the move"))
    await follower.host.wait_envelopes(1)

    assert fake.identified_by[-2:] == [leader.name, follower.name]
    assert fake.most_sockets_at_once == 1
    assert leader.host.envelopes == []
    assert leader.on_standby() and "cannot reach its database" in leader.channel.health.detail
    # the standby still sends
    target = DeliveryTarget(channel=leader.channel.ref, conversation_id=GENERAL)
    await leader.channel.send(target, "still sending")
    assert "still sending" in fake.posted(GENERAL)


async def test_a_session_stopped_during_its_handshake_leaves_no_socket_open(
    fake: FakeDiscord, tmp_path: Path, migrated_sqlite: Path
) -> None:
    """The lease is lost while the new session waits for the gateway's HELLO: discord.py
    has not kept the socket as the client's yet, and the session's close must still close
    it, or it stays open beside the next holder's (two sessions Discord would send every
    event to). A gateway of the test's own that never says HELLO holds the handshake."""
    opened = asyncio.Event()
    closed = asyncio.Event()
    codes: list[int | None] = []

    async def silent(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        opened.set()
        async for _ in ws:
            pass
        codes.append(ws.close_code)
        closed.set()
        return ws

    app = web.Application()
    app.router.add_get("/", silent)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    store = await Store.open(copy_migrated(migrated_sqlite, tmp_path / "state.db"))
    keeper_store = await Store.open(tmp_path / "state.db")
    keeper = LeaseKeeper(keeper_store.replicas, QUICK)
    replica = DiscordReplica(
        "A",
        store,
        keeper_store,
        keeper,
        make_channel(fake, store, gateway_url=f"ws://127.0.0.1:{port}/"),
        RecordingHost(replica=keeper),
    )
    try:
        await replica.start()
        await opened.wait()  # the lease taken, the socket open, HELLO awaited
        await keeper_store.aclose()  # no renewal from now on: the tenure is fenced
        await eventually(lambda: replica.on_standby())
        await eventually(closed.is_set)  # the socket closed by the fenced session
        assert codes == [1000]  # closed by it, not dropped (Discord would keep the session)
    finally:
        await replica.stop_tasks()
        await store.aclose()
        await keeper_store.aclose()
        await runner.cleanup()
