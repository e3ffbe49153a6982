"""Approvals across replicas: Apps over one real PostgreSQL database, each with its own
state directory and its own connection to the platform (the in-process channel).

A card posted by one replica and clicked through another decides the call once: the tool
runs once, on the replica whose turn asked, and the card is edited once, there. A start
expires only the pending approvals of replicas that are gone, a stop only its own; a request
whose replica died is closed by another one, its card edited and its conversation told."""

from __future__ import annotations

import asyncio

from bot.approval.reasons import RuntimeReason
from bot.channel import CardState, ClickVerdict
from bot.store import Store
from bot.store.approvals import ApprovalRecord, ApprovalStatus
from tests.approval.conftest import status_of, until_waiting
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, SLACK, Replicas, message

WAIT_S = 60.0


async def until_expired(store: Store, approval_id: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while (await status_of(store, approval_id))[0] is ApprovalStatus.PENDING:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


def gone_request(approval_id: str, replica_id: str) -> ApprovalRecord:
    """A pending request of a replica that is not running (no heartbeat at all)."""
    return ApprovalRecord(
        id=approval_id,
        channel=str(SLACK),
        conversation_id="C5",
        thread_id=None,
        session_key=f"{SLACK}:C5",
        requester="U_BOB",
        requester_name="Bob",
        tool="deploy",
        fingerprint="f" * 64,
        summary=("deploy 2",),
        ask_reason="it has side effects",
        created_at=1.0,
        expires_at=4_000_000_000.0,
        replica_id=replica_id,
    )


async def test_a_card_posted_by_one_replica_and_clicked_through_another_runs_the_tool_once(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    # as a person does: the click comes once a has stored where its card is (a click on a
    # copy whose place is not stored yet shows its outcome there too, :mod:`card_flow`)
    await until_waiting(a.app.store, card.card.approval_id)

    click = b.channel.click(card, APPROVER)  # the click lands on b's connection
    assert await clicked(b.app.approvals, click) is ClickVerdict.ACCEPTED

    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("a", {"version": "2"})]
    assert [c.state for _, c in a.channel.edits] == [CardState.APPROVED]
    assert b.channel.edits == [] and b.channel.sent == []
    # single use: the same click again decides nothing (and shows the outcome on the card)
    assert await clicked(b.app.approvals, click) is ClickVerdict.ALREADY_DECIDED
    assert [c.state for _, c in b.channel.edits] == [CardState.APPROVED]
    assert replicas.deployed == [("a", {"version": "2"})]
    audit = await b.app.store.audit.since()
    assert [(r.decision.value, r.decided_by) for r in audit if r.tool == "deploy"] == [
        ("approved", APPROVER)
    ]


async def test_a_click_by_someone_not_an_approver_is_refused_on_any_replica(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    b = await replicas.start("b")
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    assert await clicked(b.app.approvals, b.channel.click(card, "U_MALLORY")) is not (
        ClickVerdict.ACCEPTED
    )
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("a", {"version": "2"})]


async def test_a_start_expires_only_the_pending_approvals_of_gone_replicas(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    live_id = card.card.approval_id
    await a.app.store.approvals.create(gone_request("gone-1", "host:1:dead"))

    c = await replicas.start("c")  # its start expires what gone replicas left pending
    store = c.app.store
    assert await status_of(store, "gone-1") == (ApprovalStatus.EXPIRED, RuntimeReason.RESTART)
    assert await status_of(store, live_id) == (ApprovalStatus.PENDING, None)
    notices = [t for t in c.channel.texts if "please ask again" in t]
    assert len(notices) == 1  # the gone request's conversation is told, by c

    await replicas.stop(c)  # a stop expires only its own (c has none)
    assert await status_of(store := a.app.store, live_id) == (ApprovalStatus.PENDING, None)

    # a's request is still answerable, and is answered where it was asked
    b = await replicas.start("b")
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert await status_of(store, live_id) == (ApprovalStatus.APPROVED, "click")
    assert replicas.deployed == [("a", {"version": "2"})]


async def test_a_request_whose_replica_died_is_closed_by_another_replica(
    replicas: Replicas,
) -> None:
    # without parking (tests/approval/test_parking.py has the parked turn's resumption)
    no_park = {"approval": {"timeout_s": 60.0, "park": False}}
    a = await replicas.start("a", extra=no_park)
    b = await replicas.start("b", extra=no_park)
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await replicas.crash(a)

    store = b.app.store
    await until_expired(store, approval_id)
    assert await status_of(store, approval_id) == (ApprovalStatus.EXPIRED, RuntimeReason.RESTART)
    # b closes the card a posted (its platform connection reaches the same message)
    async with asyncio.timeout(WAIT_S):
        while not b.channel.edits:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    assert [(mid, c.state) for mid, c in b.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    # a click that comes too late runs nothing
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.UNKNOWN
    assert replicas.deployed == []


#: ``deploy`` needs two approvers, both listed on the channel on every replica.
TWO_KEYS = {
    "approval": {"timeout_s": 60.0, "quorum": {"rules": [{"tools": ["deploy"], "approvals": 2}]}},
    "channels": {
        "slack": {"team": {"allowed_users": ["*"], "approvers": [APPROVER, "U_BEA", "U_CAL"]}}
    },
}


async def test_two_approvals_racing_on_two_replicas_decide_a_quorum_once(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=TWO_KEYS)
    b = await replicas.start("b", extra=TWO_KEYS)
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    # the first approver's click replayed on both replicas counts once
    first = [b.channel.click(card, APPROVER), a.channel.click(card, APPROVER)]
    verdicts = await asyncio.gather(
        *(clicked(r.app.approvals, c) for r, c in zip((b, a), first, strict=True))
    )
    assert sorted(verdicts) == sorted([ClickVerdict.COUNTED, ClickVerdict.ALREADY_COUNTED])
    # two more approvers at once, one on each replica: exactly one of them decides
    second = await asyncio.gather(
        clicked(a.app.approvals, a.channel.click(card, "U_BEA")),
        clicked(b.app.approvals, b.channel.click(card, "U_CAL")),
    )
    assert sorted(second) == sorted([ClickVerdict.ACCEPTED, ClickVerdict.ALREADY_DECIDED])
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("a", {"version": "2"})]
    audit = await b.app.store.audit.since()
    rows = [(r.decision.value, r.reason) for r in audit if r.tool == "deploy"]
    assert [r for r in rows if r[0] == "voted"] == [
        ("voted", "click: approval 1 of 2"),
        ("voted", "click: approval 2 of 2"),
    ]
    assert [r[0] for r in rows if r[0] != "voted"] == ["approved"]
    record = await b.app.store.approvals.get(card.card.approval_id)
    assert record is not None and len(record.votes) == 2
