"""A session's owner row gone or moved under a replica that remembers owning it: Apps over one
real PostgreSQL database (:mod:`tests.gateway.test_handover` has the rig). The replica's
memory is a hint only: a claim needs the row, so the session's next message is run by the
replica the row names, once, in order."""

from __future__ import annotations

from tests.fakes.replica_apps import SLACK, Replicas, message
from tests.gateway.test_handover import SESSION, WAIT_S, answers, replicas, settled, took

__all__ = ["replicas"]  # the fixture


async def test_a_pruned_session_is_taken_by_the_replica_its_next_message_reaches(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))  # a takes the session (or b's sweep: took)
    first, second = await took("m1", a, b)
    await first.channel.wait_for("answer m1", within_s=WAIT_S)
    await settled(first.app.store, "1")
    handover = first.app.gateway.handover
    assert handover is not None
    # a recent window keeps the row; a window ending now lets it go
    assert await handover.prune() == 0
    assert await handover.prune(idle_s=-60.0) == 1
    assert await first.app.store.session_owners.owner(SESSION) is None

    await second.deliver(message("m2 second", "2"))  # nobody owns it: taken here
    await second.channel.wait_for("answer m2", within_s=WAIT_S)
    await first.deliver(message("m3 third", "3"))  # it forgot it owned it: handed over
    await second.channel.wait_for("answer m3", within_s=WAIT_S)
    await settled(second.app.store, "2", "3")
    assert replicas.log == [(first.name, "m1"), (second.name, "m2"), (second.name, "m3")]
    assert answers(first) == ["answer m1"]
    assert answers(second) == ["answer m2", "answer m3"]
    assert await second.app.store.session_owners.owner(SESSION) == second.app.keeper.replica_id  # type: ignore[union-attr]


async def test_a_replica_whose_row_moved_claims_nothing_and_hands_the_message_over(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))
    first, second = await took("m1", a, b)
    await first.channel.wait_for("answer m1", within_s=WAIT_S)
    await settled(first.app.store, "1")
    store = second.app.store
    # the row moves to the second behind the first's back (as when it was taken for dead
    # a moment)
    second_id = second.app.keeper.replica_id  # type: ignore[union-attr]
    first_id = first.app.keeper.replica_id  # type: ignore[union-attr]
    assert await store.session_owners.take(SESSION, second_id, was=first_id, at=0.0)

    await first.deliver(message("m2 second", "2"))  # it still thinks it owns the session
    await second.channel.wait_for("answer m2", within_s=WAIT_S)
    await settled(store, "2")
    assert replicas.log == [(first.name, "m1"), (second.name, "m2")]
    assert answers(first) == ["answer m1"]
    assert str(SLACK) in SESSION
