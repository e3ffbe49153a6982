"""The lease keeper: two keepers over one database stand for two replicas. Roles are taken
by one at a time, a dead holder is replaced once its lease expires, a holder that cannot
renew stops before the other starts, and a replica whose heartbeats fail takes no work
until they succeed again. Real time with short leases; every wait is a condition with a
generous timeout, and what is asserted is the order of events, never how long they took."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.config.replicas import ReplicasConfig
from bot.replicas import LeaseKeeper
from bot.store import Store
from tests.replicas.waiting import eventually

ROLE = "telegram.main.poll"
#: Short leases, with room for a loaded machine: a heartbeat may be late by 0.4 s.
QUICK = ReplicasConfig(heartbeat_s=0.1, lease_ttl_s=1.0, max_clock_skew_s=0.3)


@dataclass
class Replica:
    """One replica for the test: its store, keeper, heartbeat task and leading task."""

    name: str
    store: Store
    keeper: LeaseKeeper
    events: list[str]
    beating: asyncio.Task[None] | None = None
    leading: asyncio.Task[None] | None = None
    standby: list[str] = field(default_factory=list)
    lost: int = 0

    async def work(self) -> None:
        self.events.append(f"{self.name} starts")
        try:
            await asyncio.Event().wait()
        finally:
            self.events.append(f"{self.name} stops")

    def lead(self, role: str = ROLE, *, again: bool = True) -> None:
        async def leading() -> None:
            while True:
                await self.keeper.lead(role, self.work, standby=self.standby.append)
                self.lost += 1
                if not again:
                    return

        self.leading = asyncio.create_task(leading())

    async def start(self) -> None:
        await self.keeper.join()
        self.beating = asyncio.create_task(self.keeper.run())

    async def die(self) -> None:
        """As a kill -9: the database sees nothing more from it (its store is closed
        first, so nothing it still tries to write gets through), then its tasks end."""
        await self.store.aclose()
        for task in (self.leading, self.beating):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def stop(self) -> None:
        for task in (self.leading, self.beating):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.keeper.leave()


async def pair_on(
    open_store: Callable[[], Awaitable[Store]],
) -> AsyncIterator[tuple[Replica, Replica]]:
    events: list[str] = []
    made: list[Replica] = []
    for name in ("A", "B"):
        store = await open_store()
        made.append(Replica(name, store, LeaseKeeper(store.replicas, QUICK), events))
    for replica in made:
        await replica.start()
    try:
        yield made[0], made[1]
    finally:
        for replica in made:
            with contextlib.suppress(Exception):
                await replica.stop()
            await replica.store.aclose()


@pytest.fixture(params=["sqlite", "postgres"])
async def replicas(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Replica, Replica]]:
    """Two replicas over one SQLite file, or over one PostgreSQL database."""
    if request.param == "sqlite":

        async def open_store() -> Store:
            return await Store.open(tmp_path / "shared.db")

    else:
        url = request.getfixturevalue("pg_url")

        async def open_store() -> Store:
            return await Store.open_postgres(url, pool_size=2)

    async for pair in pair_on(open_store):
        yield pair


@pytest.fixture
async def on_sqlite(tmp_path: Path) -> AsyncIterator[tuple[Replica, Replica]]:
    async def open_store() -> Store:
        return await Store.open(tmp_path / "shared.db")

    async for pair in pair_on(open_store):
        yield pair


def leader(a: Replica, b: Replica) -> tuple[Replica, Replica]:
    """(the one that started, the other), once one has."""
    first = a.events[0].split()[0]
    return (a, b) if first == a.name else (b, a)


async def test_one_replica_leads_and_a_dead_one_is_replaced_by_the_other(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    a.lead()
    b.lead()
    await eventually(lambda: len(a.events) == 1 and bool(a.standby or b.standby))
    holder, other = leader(a, b)
    assert other.standby == [f"another replica holds {ROLE}"]
    taken = await other.store.replicas.lease(ROLE)
    assert taken is not None and (taken.holder, taken.generation) == (holder.keeper.replica_id, 1)

    await holder.die()
    await eventually(lambda: f"{other.name} starts" in a.events)
    # the dead one's work ended (its task was cancelled) and nothing overlapped
    assert a.events == [f"{holder.name} starts", f"{holder.name} stops", f"{other.name} starts"]
    now = await other.store.replicas.lease(ROLE)
    assert now is not None and (now.holder, now.generation) == (other.keeper.replica_id, 2)
    assert other.keeper.held() == [ROLE]


async def test_a_holder_whose_heartbeats_fail_stops_before_the_other_starts(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    a.lead()
    await eventually(lambda: a.events == ["A starts"])
    b.lead()
    await eventually(lambda: bool(b.standby))
    # A's database goes away under it: its heartbeats fail from now on, but it lives on
    await a.store.aclose()
    await eventually(lambda: "B starts" in a.events)
    assert a.events == ["A starts", "A stops", "B starts"]
    # A's leading call returned (the lease was lost) instead of raising, and A waits again
    assert a.lost == 1 and a.leading is not None and not a.leading.done()
    refusal = a.keeper.refusal()
    assert refusal is not None and "cannot reach its database" in refusal
    assert a.keeper.held() == []
    assert b.keeper.refusal() is None


async def test_a_fenced_lease_is_not_held_while_its_work_winds_down(
    replicas: tuple[Replica, Replica],
) -> None:
    """The fence tells the work to stop; work still finishing (waiting on a database that
    stopped answering) does not make the lease the replica's any more."""
    a, _ = replicas
    winding_down, finish = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        a.events.append("A starts")
        try:
            await asyncio.Event().wait()
        finally:
            winding_down.set()
            await asyncio.shield(finish.wait())

    leading = asyncio.create_task(a.keeper.lead(ROLE, slow_to_stop))
    await eventually(lambda: a.events == ["A starts"])
    assert a.keeper.held() == [ROLE]
    await a.store.aclose()  # its heartbeats fail from now on: the fence fires on its timer
    await asyncio.wait_for(winding_down.wait(), 30)
    assert a.keeper.held() == []
    finish.set()
    await leading
    assert a.keeper.held() == []


async def test_work_that_ends_releases_the_role_to_the_other_at_once(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    done = asyncio.Event()

    async def short_work() -> None:
        a.events.append("A works once")
        await done.wait()

    leading = asyncio.create_task(a.keeper.lead(ROLE, short_work))
    await eventually(lambda: a.events == ["A works once"])
    b.lead()
    await eventually(lambda: bool(b.standby))
    with capture_logs() as logs:
        done.set()
        await leading  # returns what the work returned
    # A ended its own tenure (a release names the holder and the generation: a lapsed lease
    # B had taken meanwhile would not be released); B, trying every heartbeat on a
    # connection of its own, may take it before this test reads the row again
    assert [e["generation"] for e in logs if e["event"] == "lease_released"] == [1]
    await eventually(lambda: "B starts" in a.events)
    now = await b.store.replicas.lease(ROLE)
    assert now is not None and (now.holder, now.generation) == (b.keeper.replica_id, 2)


async def test_work_that_fails_releases_the_role_and_raises(
    replicas: tuple[Replica, Replica],
) -> None:
    a, _ = replicas

    async def failing() -> None:
        raise RuntimeError("the adapter broke")

    with pytest.raises(RuntimeError, match="the adapter broke"):
        await a.keeper.lead(ROLE, failing)
    lease = await a.store.replicas.lease(ROLE)
    assert lease is not None and lease.expires_at == 0
    assert a.keeper.held() == []


async def test_cancelling_the_caller_cancels_the_work_and_releases(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    a.lead(again=False)
    await eventually(lambda: a.events == ["A starts"])
    assert a.leading is not None
    a.leading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await a.leading
    assert a.events == ["A starts", "A stops"]
    lease = await b.store.replicas.lease(ROLE)
    assert lease is not None and lease.expires_at == 0


async def refuse_releases(store: Store, *, refuse: bool = True) -> None:
    """Have the database refuse every release of a lease (a trigger), or no longer."""
    if "postgres" in type(store.db).__module__:
        if refuse:
            await store.db.execute(
                "CREATE FUNCTION refuse_release() RETURNS trigger LANGUAGE plpgsql AS"
                " 'BEGIN IF NEW.expires_at = 0 THEN RAISE EXCEPTION ''refused''; END IF;"
                " RETURN NEW; END'"
            )
            await store.db.execute(
                "CREATE TRIGGER refuse_release BEFORE UPDATE ON leases"
                " FOR EACH ROW EXECUTE FUNCTION refuse_release()"
            )
        else:
            await store.db.execute("DROP TRIGGER refuse_release ON leases")
            await store.db.execute("DROP FUNCTION refuse_release()")
    elif refuse:
        await store.db.execute(
            "CREATE TRIGGER refuse_release BEFORE UPDATE ON leases"
            " WHEN NEW.expires_at = 0 BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
    else:
        await store.db.execute("DROP TRIGGER refuse_release")


async def test_a_lease_whose_release_failed_is_not_renewed_and_goes_to_the_other(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    done = asyncio.Event()

    async def short_work() -> None:
        a.events.append("A works once")
        await done.wait()

    leading = asyncio.create_task(a.keeper.lead(ROLE, short_work))
    await eventually(lambda: a.events == ["A works once"])
    b.lead()
    await eventually(lambda: bool(b.standby))
    await refuse_releases(a.store)
    try:
        done.set()
        await leading
        assert a.keeper.held() == []
        kept = await b.store.replicas.lease(ROLE)
        assert kept is not None and kept.holder == a.keeper.replica_id and kept.expires_at > 0
        # A's heartbeats go on but no longer renew it: it lapses, and B takes it
        await eventually(lambda: "B starts" in a.events)
        assert a.keeper.refusal() is None
        now = await b.store.replicas.lease(ROLE)
        assert now is not None and (now.holder, now.generation) == (b.keeper.replica_id, 2)
    finally:
        await refuse_releases(a.store, refuse=False)


async def test_a_replica_whose_database_stops_answering_refuses_work_until_it_answers(
    on_sqlite: tuple[Replica, Replica], tmp_path: Path
) -> None:
    a, _ = on_sqlite
    await eventually(lambda: a.keeper.refusal() is None)
    # another process holds the database's write lock: heartbeats get no answer in time
    blocker = sqlite3.connect(tmp_path / "shared.db", isolation_level=None)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        await eventually(lambda: a.keeper.refusal() is not None)
        refusal = a.keeper.refusal()
        assert refusal is not None and "cannot reach its database" in refusal
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await eventually(lambda: a.keeper.refusal() is None)


async def test_a_clean_leave_releases_every_lease_and_removes_the_row(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    a.lead()
    a_second = asyncio.create_task(a.keeper.lead("discord.main.gateway", a.work))
    await eventually(lambda: a.events.count("A starts") == 2)
    rows = {r.id for r in await b.store.replicas.all()}
    assert rows == {a.keeper.replica_id, b.keeper.replica_id}
    await a.keeper.leave()
    leases = await b.store.replicas.leases()
    assert [(lease.name, lease.expires_at) for lease in leases] == [
        ("discord.main.gateway", 0),
        (ROLE, 0),
    ]
    assert {r.id for r in await b.store.replicas.all()} == {b.keeper.replica_id}
    # their work was stopped as they were released
    await eventually(lambda: a.events.count("A stops") == 2)
    a_second.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await a_second
