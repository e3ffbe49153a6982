"""A session's owner row gone or moved under a replica that remembers owning it: Apps over one
real PostgreSQL database (:mod:`tests.gateway.test_handover` has the rig). The replica's
memory is a hint only: a claim needs the row, so the session's next message is run by the
replica the row names, once, in order."""

from __future__ import annotations

from tests.fakes.replica_apps import SLACK, Replicas, message
from tests.gateway.test_handover import SESSION, WAIT_S, answers, replicas, settled

__all__ = ["replicas"]  # the fixture


async def test_a_pruned_session_is_taken_by_the_replica_its_next_message_reaches(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))
    await a.channel.wait_for("answer m1", within_s=WAIT_S)
    await settled(a.app.store, "1")
    handover = a.app.gateway.handover
    assert handover is not None
    # a recent window keeps the row; a window ending now lets it go
    assert await handover.prune() == 0
    assert await handover.prune(idle_s=-60.0) == 1
    assert await a.app.store.session_owners.owner(SESSION) is None

    await b.deliver(message("m2 second", "2"))  # nobody owns it: b takes it
    await b.channel.wait_for("answer m2", within_s=WAIT_S)
    await a.deliver(message("m3 third", "3"))  # a forgot it owned it: handed over to b
    await b.channel.wait_for("answer m3", within_s=WAIT_S)
    await settled(b.app.store, "2", "3")
    assert replicas.log == [("a", "m1"), ("b", "m2"), ("b", "m3")]
    assert answers(a) == ["answer m1"]
    assert answers(b) == ["answer m2", "answer m3"]
    assert await b.app.store.session_owners.owner(SESSION) == b.app.keeper.replica_id  # type: ignore[union-attr]


async def test_a_replica_whose_row_moved_claims_nothing_and_hands_the_message_over(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 first", "1"))
    await a.channel.wait_for("answer m1", within_s=WAIT_S)
    await settled(a.app.store, "1")
    store = b.app.store
    # the row moves to b behind a's back (as when a was taken for dead a moment)
    b_id = b.app.keeper.replica_id  # type: ignore[union-attr]
    a_id = a.app.keeper.replica_id  # type: ignore[union-attr]
    assert await store.session_owners.take(SESSION, b_id, was=a_id, at=0.0)

    await a.deliver(message("m2 second", "2"))  # a still thinks it owns the session
    await b.channel.wait_for("answer m2", within_s=WAIT_S)
    await settled(store, "2")
    assert replicas.log == [("a", "m1"), ("b", "m2")]
    assert answers(a) == ["answer m1"]
    assert str(SLACK) in SESSION
