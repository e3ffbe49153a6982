"""Which replicas count as alive around this replica's own database outage (a real
PostgreSQL store; the outage and the clock are the test's): those alive when it began stay
alive until the TTL after it ended, since they could not write their heartbeats either; a
replica that stays silent after that is gone. This replica is steady again (it may settle
what it left itself) only then."""

from __future__ import annotations

from bot.replicas.identity import ReplicaIdentity
from bot.store import Store
from bot.store.liveness import Liveness

TTL_S = 5.0


class World:
    def __init__(self) -> None:
        self.now = 10_000.0
        self.outage: tuple[float, float | None] | None = None

    def clock(self) -> float:
        return self.now

    def last_outage(self) -> tuple[float, float | None] | None:
        return self.outage


async def test_replicas_alive_when_an_outage_began_stay_alive_until_the_ttl_after_it(
    pg_store: Store,
) -> None:
    world = World()
    me = ReplicaIdentity.of_this_process(now=world.now)
    other = ReplicaIdentity.of_this_process(now=world.now)
    await pg_store.replicas.register(me.record(heartbeat_at=world.now))
    await pg_store.replicas.register(other.record(heartbeat_at=world.now))
    liveness = Liveness(
        pg_store.replicas,
        replica_id=me.id,
        ttl_s=TTL_S,
        clock=world.clock,
        outage=world.last_outage,
    )
    assert await liveness.live_replicas() == {me.id, other.id}
    assert liveness.steady()

    world.now += 1.0
    world.outage = (world.now, None)  # this replica's heartbeats fail from here
    world.now += 20.0
    assert await liveness.live_replicas() == {me.id, other.id}
    assert not liveness.steady()

    world.outage = (world.outage[0], world.now)  # back; the other has not beaten yet
    world.now += TTL_S - 1.0
    assert await liveness.live_replicas() == {me.id, other.id}
    assert not liveness.steady()

    world.now += 1.0  # the TTL after the outage passed: a replica still silent is gone
    assert await liveness.live_replicas() == {me.id}
    assert liveness.steady()


async def test_without_an_outage_a_silent_replica_is_gone_after_the_ttl(pg_store: Store) -> None:
    world = World()
    me = ReplicaIdentity.of_this_process(now=world.now)
    other = ReplicaIdentity.of_this_process(now=world.now)
    await pg_store.replicas.register(other.record(heartbeat_at=world.now))
    liveness = Liveness(
        pg_store.replicas,
        replica_id=me.id,
        ttl_s=TTL_S,
        clock=world.clock,
        outage=world.last_outage,
    )
    world.now += TTL_S + 0.5
    assert await liveness.live_replicas() == {me.id}
    assert liveness.steady()
