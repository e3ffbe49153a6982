"""Parked turns and session owners (docs/approvals.md, "Parking and resumption"; docs/
reliability.md, "Several replicas"), with Apps over one real PostgreSQL database and the
in-process channel: a parked turn's resumption runs on the replica that owns its session
now, queued behind that session's turns (never beside one, never on the replica that saw the
decision); a dead owner's parked turns are adopted by the replica that takes its session over
(their rows and their cards name it, so its reminder sweep reminds them), and resumed there."""

from __future__ import annotations

import asyncio

from bot.channel import ClickVerdict
from bot.store import Store
from bot.store.parked import ParkState
from tests.approval.conftest import (
    PARK_SOON,
    WAIT_S,
    answers,
    parked_card,
    until_done,
    until_state,
)
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replica, Replicas, message

SESSION = "slack.team:C1"


def replica_id(replica: Replica) -> str:
    keeper = replica.app.keeper
    assert keeper is not None
    return keeper.replica_id


async def until_adopted(store: Store, approval_id: str, by: str) -> None:
    """Until the parked row and its card name ``by``."""
    async with asyncio.timeout(WAIT_S):
        while True:
            row = await store.parked.row(approval_id)
            card = await store.approvals.get(approval_id)
            if row is not None and row.owner == by and card is not None and card.replica_id == by:
                return
            await asyncio.sleep(0.05)


async def test_a_decision_on_another_replica_resumes_on_the_owner_behind_its_running_turn(
    replicas: Replicas,
) -> None:
    m2 = asyncio.Event()
    a = await replicas.start("a", extra=PARK_SOON, holds={"m2": m2})
    b = await replicas.start("b", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    # a newer message of the same session runs on a (its owner) and is held at the model
    await a.deliver(message("m2 hello", "2"))
    await asyncio.wait_for(a.model.reached.setdefault("m2", asyncio.Event()).wait(), WAIT_S)

    # the card is decided through b, whose sweep sees it first: b does not own the session
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is (
        ClickVerdict.ACCEPTED
    )
    assert await b.app.resumptions.sweep() == 0
    assert await b.app.store.session_owners.owner(SESSION) == replica_id(a)
    # a claims it and queues it behind m2, which still runs
    await until_state(a.app.store, approval_id, ParkState.RESUMING)
    row = await a.app.store.parked.row(approval_id)
    assert row is not None and row.owner == replica_id(a)
    m2.set()
    await until_done(a.app.store, approval_id)
    assert replicas.deployed == [("a", {"version": "2"})]
    assert answers(a, b) == ["done: deployed v2"]
    texts = a.channel.texts
    # one turn at a time: m2's answer, then the resumption's
    assert texts.index("answer m2") < texts.index("done: deployed v2")
    assert [t for t in b.channel.texts if t.startswith(("answer", "done"))] == []


async def test_a_dead_owners_parked_turn_is_adopted_with_its_reminders_and_resumed_there(
    replicas: Replicas,
) -> None:
    # a has no reminders configured (its sweep would never remind); b reminds after 0.5 s,
    # but only the cards whose row names b: the card a posted reaches b's sweep only once
    # b has adopted it
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.crash(a)

    reminding = {"approval": {**PARK_SOON["approval"], "remind_after_s": 0.5, "remind_max": 1}}
    b = await replicas.start("b", extra=reminding)
    store = b.app.store
    await until_adopted(store, approval_id, replica_id(b))
    # b took the session over: the turn is its own
    assert await store.session_owners.owner(SESSION) == replica_id(b)
    await b.channel.wait_for("⏰ Reminder 1/1: deploy", within_s=WAIT_S)

    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is (
        ClickVerdict.ACCEPTED
    )
    await until_done(store, approval_id)
    assert replicas.deployed == [("b", {"version": "2"})]
    assert answers(a, b) == ["done: deployed v2"]


async def test_only_the_replica_that_takes_the_session_over_adopts_and_resumes(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.crash(a)

    b = await replicas.start("b", extra=PARK_SOON)
    c = await replicas.start("c", extra=PARK_SOON)
    store = b.app.store
    # both sweep; whichever takes the session over adopts the turn, the other leaves it
    async with asyncio.timeout(WAIT_S):
        while (owner := await store.session_owners.owner(SESSION)) in (None, replica_id(a)):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    taker, other = (b, c) if owner == replica_id(b) else (c, b)
    await until_adopted(store, approval_id, replica_id(taker))
    assert await other.app.resumptions.sweep() == 0

    # decided through the other replica: resumed on the one that owns the session
    assert await clicked(other.app.approvals, other.channel.click(card, APPROVER)) is (
        ClickVerdict.ACCEPTED
    )
    assert await other.app.resumptions.sweep() == 0
    await until_done(store, approval_id)
    assert replicas.deployed == [(taker.name, {"version": "2"})]
    assert answers(a, b, c) == ["done: deployed v2"]
