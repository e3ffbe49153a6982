"""Two Telegram adapters over one store, as two replicas: the real python-telegram-bot against
the loopback fake, each replica with a lease keeper of its own over one SQLite file.

The fake records which client sent each ``getUpdates`` and, as Telegram does, ends a waiting
poll when another arrives (a *conflict* when the ended poll still had its client). Only the
replica holding ``telegram.main.poll`` polls; when it dies the other takes over from the
offset in the store; when it cannot renew its lease it stops polling before the other one
starts. Waits are conditions with generous timeouts; what is asserted is who polled, in which
order, and what each host received."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config.replicas import ReplicasConfig
from bot.replicas import LeaseKeeper
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from channels.telegram.offset import PollingOffset
from tests.fakes.recording_host import RecordingHost
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REF, REQUESTER, channel_for
from tests.replicas.waiting import eventually, eventually_async

QUICK = ReplicasConfig(heartbeat_s=0.1, lease_ttl_s=1.0, max_clock_skew_s=0.3)


@dataclass
class TelegramReplica:
    """One replica: the adapter's store, the keeper's store (its heartbeat connection), the
    adapter and its host, and their tasks."""

    name: str
    store: Store
    keeper_store: Store
    keeper: LeaseKeeper
    channel: TelegramChannel
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
        return self.channel.health.detail.startswith("standby, not polling")

    async def stop_tasks(self) -> None:
        for task in self.tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def die(self) -> None:
        """As a kill -9: nothing more reaches the database, then its tasks end."""
        await self.keeper_store.aclose()
        await self.store.aclose()
        await self.stop_tasks()


@pytest.fixture(params=["sqlite", "postgres"])
async def pair(
    request: pytest.FixtureRequest, tg: FakeTelegram, tmp_path: Path
) -> AsyncIterator[list[TelegramReplica]]:
    """Two replicas over one SQLite file, or over one PostgreSQL database."""
    if request.param == "sqlite":

        async def open_store() -> Store:
            return await Store.open(tmp_path / "shared.db")

    else:
        url = request.getfixturevalue("pg_url")

        async def open_store() -> Store:
            return await Store.open_postgres(url, pool_size=2)

    made: list[TelegramReplica] = []
    for name in ("A", "B"):
        store = await open_store()
        keeper_store = await open_store()
        keeper = LeaseKeeper(keeper_store.replicas, QUICK)
        channel = channel_for(tg, store, api_base_url=tg.base_url_for(name))
        host = RecordingHost(replica=keeper)
        made.append(TelegramReplica(name, store, keeper_store, keeper, channel, host))
    for replica in made:
        await replica.start()
    try:
        yield made
    finally:
        for replica in made:
            await replica.stop_tasks()
            await replica.store.aclose()
            await replica.keeper_store.aclose()


async def dm(tg: FakeTelegram, text: str, message_id: int) -> int:
    chat = private_chat(REQUESTER)
    return await tg.push({"message": message(chat, user(REQUESTER), text, message_id=message_id)})


async def polling(tg: FakeTelegram, pair: list[TelegramReplica]) -> TelegramReplica:
    """The replica that polls, once one does and the other is on standby."""
    await eventually(lambda: bool(tg.poll_book.clients()))
    [first] = tg.poll_book.clients()
    leader = next(r for r in pair if r.name == first)
    other = next(r for r in pair if r is not leader)
    await eventually(other.on_standby)
    return leader


async def test_one_replica_polls_and_a_dead_one_is_replaced_from_the_stored_offset(
    tg: FakeTelegram, pair: list[TelegramReplica]
) -> None:
    leader = await polling(tg, pair)
    follower = next(r for r in pair if r is not leader)
    before = [await dm(tg, f"before {n}", 10 + n) for n in range(3)]
    await eventually(lambda: len(leader.texts()) == 3)
    offset = PollingOffset(follower.store.channel_state, str(REF))

    async def stored() -> int | None:
        return await offset.load()

    async def confirmed() -> bool:
        return await stored() == before[-1] + 1

    await eventually_async(confirmed)
    # a new long poll from the leader, confirming them: the moment to die without loss
    await tg.wait_for("getUpdates", lambda c: c.params.get("offset") == before[-1] + 1)
    assert tg.poll_book.clients() == [leader.name]

    await leader.die()
    after = [await dm(tg, f"after {n}", 20 + n) for n in range(3)]
    await eventually(lambda: len(follower.texts()) == 3)

    assert leader.texts() == ["before 0", "before 1", "before 2"]
    assert follower.texts() == ["after 0", "after 1", "after 2"]
    assert tg.poll_book.clients() == [leader.name, follower.name]
    first_poll = next(c for c in tg.calls_of("getUpdates") if c.client == follower.name)
    assert first_poll.params.get("offset") == before[-1] + 1
    assert after[0] == before[-1] + 1
    assert tg.poll_book.conflicts == []
    assert await stored() == after[-1] + 1


async def test_a_replica_that_cannot_renew_stops_polling_before_the_other_starts(
    tg: FakeTelegram, pair: list[TelegramReplica]
) -> None:
    leader = await polling(tg, pair)
    follower = next(r for r in pair if r is not leader)
    await dm(tg, "one", 10)
    await eventually(lambda: leader.texts() == ["one"])

    # the leader's heartbeats fail from now on; its adapter runs on
    await leader.keeper_store.aclose()
    await eventually(lambda: bool(tg.poll_book.by(follower.name)))
    await dm(tg, "two", 11)
    await eventually(lambda: follower.texts() == ["two"])

    # the leader had stopped polling when the follower began: no two live polls, ever,
    # and nothing of the leader's after the follower's first
    assert tg.poll_book.conflicts == []
    follower_first = tg.poll_book.by(follower.name)[0].began
    assert all(
        call.at < follower_first
        for call in tg.calls
        if call.client == leader.name and call.method == "getUpdates"
    )
    assert leader.texts() == ["one"]
    assert leader.on_standby()
    assert "cannot reach its database" in leader.channel.health.detail
    assert leader.keeper.held() == []
    assert follower.keeper.held() == ["telegram.main.poll"]
