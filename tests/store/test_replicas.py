"""The replicas and leases repository on both engines: two stores over one database stand
for two processes; the clock is the ``now`` each call passes, so expiry needs no waiting."""

from __future__ import annotations

from bot.store import Store
from bot.store.replicas import ReplicaRecord

TTL = 5.0


def replica(name: str, *, at: float = 100.0) -> ReplicaRecord:
    return ReplicaRecord(id=name, host="host-" + name, pid=4000, started_at=at, heartbeat_at=at)


async def test_a_free_lease_is_granted_once_and_refused_to_the_other(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    got = await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=100.0 + TTL)
    assert got is not None
    assert (got.holder, got.generation, got.expires_at) == ("A", 1, 105.0)
    assert await b.replicas.acquire("telegram.main.poll", "B", now=101.0, expires_at=106.0) is None
    held = await b.replicas.lease("telegram.main.poll")
    assert held is not None and held.holder == "A"


async def test_taking_a_held_lease_again_renews_the_same_tenure(two: tuple[Store, Store]) -> None:
    a, _ = two
    await a.replicas.acquire("discord.main.gateway", "A", now=100.0, expires_at=105.0)
    again = await a.replicas.acquire("discord.main.gateway", "A", now=103.0, expires_at=108.0)
    assert again is not None
    assert (again.generation, again.expires_at) == (1, 108.0)


async def test_an_expired_lease_goes_to_the_next_taker_with_the_next_generation(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=105.0)
    # at its expiry instant it is still A's
    assert await b.replicas.acquire("telegram.main.poll", "B", now=105.0, expires_at=110.0) is None
    taken = await b.replicas.acquire("telegram.main.poll", "B", now=105.5, expires_at=110.5)
    assert taken is not None
    assert (taken.holder, taken.generation) == ("B", 2)
    # A's renewal finds nothing: the lease is lost to it
    assert await a.replicas.renew("A", ["telegram.main.poll"], now=105.6, expires_at=110.6) == []
    # and A's release of its old tenure leaves B's alone
    assert await a.replicas.release("telegram.main.poll", "A", 1) is False
    still = await a.replicas.lease("telegram.main.poll")
    assert still is not None and (still.holder, still.expires_at) == ("B", 110.5)


async def test_renewal_extends_only_live_leases_of_the_holder(two: tuple[Store, Store]) -> None:
    a, b = two
    await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=105.0)
    await a.replicas.acquire("discord.main.gateway", "A", now=100.0, expires_at=102.0)
    await b.replicas.acquire("telegram.other.poll", "B", now=100.0, expires_at=105.0)
    renewed = await a.replicas.renew(
        "A", ["telegram.main.poll", "discord.main.gateway"], now=103.0, expires_at=108.0
    )
    # the gateway lease had expired at 102: not renewed, although nobody took it
    assert [(r.name, r.expires_at, r.generation) for r in renewed] == [
        ("telegram.main.poll", 108.0, 1)
    ]
    other = await b.replicas.lease("telegram.other.poll")
    assert other is not None and other.expires_at == 105.0
    # A's own lapsed lease, taken again, is a new tenure
    back = await a.replicas.acquire("discord.main.gateway", "A", now=103.0, expires_at=108.0)
    assert back is not None and back.generation == 2


async def test_a_released_lease_is_free_at_once_and_generations_keep_growing(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    first = await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=105.0)
    assert first is not None
    assert await a.replicas.release("telegram.main.poll", "A", first.generation) is True
    taken = await b.replicas.acquire("telegram.main.poll", "B", now=100.1, expires_at=105.1)
    assert taken is not None and (taken.holder, taken.generation) == ("B", 2)
    assert await b.replicas.release_all("B") == ["telegram.main.poll"]
    assert await b.replicas.release_all("B") == []
    again = await a.replicas.acquire("telegram.main.poll", "A", now=100.2, expires_at=105.2)
    assert again is not None and again.generation == 3


async def test_heartbeat_refreshes_the_replica_and_renews_its_leases_in_one_go(
    two: tuple[Store, Store],
) -> None:
    a, b = two
    me = replica("A")
    await a.replicas.register(me)
    await b.replicas.register(replica("B", at=101.0))
    await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=105.0)
    renewed = await a.replicas.heartbeat(me, ["telegram.main.poll"], now=104.0, expires_at=109.0)
    assert [(r.name, r.expires_at) for r in renewed] == [("telegram.main.poll", 109.0)]
    rows = {r.id: r.heartbeat_at for r in await b.replicas.all()}
    assert rows == {"A": 104.0, "B": 101.0}
    assert [r.id for r in await b.replicas.live(since=102.0)] == ["A"]
    # a row removed by another process comes back with the next heartbeat
    await b.replicas.remove("A")
    await a.replicas.heartbeat(me, [], now=105.0, expires_at=110.0)
    assert [r.id for r in await b.replicas.live(since=102.0)] == ["A"]
    assert await b.replicas.prune(before=102.0) == 1
    assert [r.id for r in await a.replicas.all()] == ["A"]


async def test_a_heartbeat_renews_only_the_leases_named_as_held(
    two: tuple[Store, Store],
) -> None:
    # A's release of the gateway lease failed (the database did not answer): A no longer
    # holds it, and its heartbeats must not keep it alive for ever
    a, b = two
    me = replica("A")
    await a.replicas.register(me)
    await a.replicas.acquire("telegram.main.poll", "A", now=100.0, expires_at=105.0)
    await a.replicas.acquire("discord.main.gateway", "A", now=100.0, expires_at=105.0)
    for at in (103.0, 106.0, 109.0):
        renewed = await a.replicas.heartbeat(
            me, ["telegram.main.poll"], now=at, expires_at=at + TTL
        )
        assert [r.name for r in renewed] == ["telegram.main.poll"]
    # the gateway lease lapsed at 105 and goes to the next taker
    taken = await b.replicas.acquire("discord.main.gateway", "B", now=109.5, expires_at=114.5)
    assert taken is not None and (taken.holder, taken.generation) == ("B", 2)
    # holding nothing renews nothing (and names another replica's lease in vain)
    assert await a.replicas.heartbeat(me, [], now=110.0, expires_at=115.0) == []
    assert await a.replicas.renew("A", ["discord.main.gateway"], now=110.0, expires_at=115.0) == []
    still = await b.replicas.lease("discord.main.gateway")
    assert still is not None and (still.holder, still.expires_at) == ("B", 114.5)


async def test_two_takers_of_one_expired_lease_at_once_one_wins(two: tuple[Store, Store]) -> None:
    import asyncio

    a, b = two
    await a.replicas.acquire("telegram.main.poll", "old", now=100.0, expires_at=101.0)
    results = await asyncio.gather(
        *(
            store.replicas.acquire("telegram.main.poll", name, now=102.0, expires_at=107.0)
            for _ in range(5)
            for store, name in ((a, "A"), (b, "B"))
        )
    )
    winners = {r.holder for r in results if r is not None}
    assert len(winners) == 1
    held = await a.replicas.lease("telegram.main.poll")
    assert held is not None and held.holder in winners and held.generation == 2
