"""Rolling upgrades (issue 39: parking is on only while every live replica advertises it),
with Apps over one real PostgreSQL database: a replica whose row advertises nothing stands
for a live replica of a release from before parking (its row as that release writes it,
``capabilities`` left at the column's default). While it lives, the other replica's cards
wait in their turns and a stop expires them, as with ``approval.park = false``, and it says
so once in its log; once every live replica parks again, cards park again. ``hatchway
doctor`` names the replica that keeps parking off."""

from __future__ import annotations

import asyncio
import dataclasses

from structlog.testing import capture_logs

from bot.approval.reasons import RuntimeReason
from bot.channel import ApprovalCard, ClickVerdict, SentMessage
from bot.commands.doctor.postgres import replicas_check
from bot.envelope import DeliveryTarget
from bot.store.approvals import ApprovalStatus
from bot.store.parked import ParkState
from tests.approval.conftest import WAIT_S, answers, status_of
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replica, Replicas, message

#: No replica fails over here: leases long enough that a loaded machine's slow heartbeat
#: never has a replica refuse work (the default quick ones fence after 0.7 s).
STEADY = {"heartbeat_s": 1.0, "lease_ttl_s": 10.0, "max_clock_skew_s": 1.0}
PARK_SOON = {"approval": {"timeout_s": 60.0, "wait_in_turn_s": 0.2}, "replicas": STEADY}


async def advertise(replica: Replica, by: Replica, capabilities: str) -> None:
    """Set ``replica``'s row as a release advertising ``capabilities`` writes it (a
    heartbeat never changes it)."""
    keeper = replica.app.keeper
    assert keeper is not None
    await by.app.store.db.execute(
        "UPDATE replicas SET capabilities = ? WHERE id = ?", (capabilities, keeper.replica_id)
    )


async def card_in(replica: Replica, tag: str, conversation: str) -> str:
    await replica.deliver(message(f"{tag} deploy please", tag, conversation=conversation))
    posted = await asyncio.wait_for(replica.channel.next_card(), WAIT_S)
    return posted.card.approval_id


async def test_a_live_replica_that_does_not_park_keeps_parking_off(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    b = await replicas.start("b", extra=PARK_SOON)
    settings = a.app.settings
    doctor = await replicas_check(settings)
    assert doctor is not None and not doctor.warning
    assert "2 live" in doctor.detail and "all park approvals" in doctor.detail

    await advertise(b, a, "")  # b: a release from before parking
    b_id = b.app.keeper.replica_id if b.app.keeper else ""
    doctor = await replicas_check(settings)
    assert doctor is not None and doctor.ok and doctor.warning
    assert b_id in doctor.detail and "parking is off" in doctor.detail

    with capture_logs() as logs:
        first = await card_in(a, "m1", "C1")
        second = await card_in(a, "m2", "C2")
        # no park record: the turns wait in their coroutines (the record is written before
        # the card is posted, when a turn can park)
        assert await a.app.store.parked.row(first) is None
        assert await a.app.store.parked.row(second) is None
        off = [e for e in logs if e["event"] == "parking_off_during_upgrade"]
        assert len(off) == 1  # said once, not per card
        assert off[0]["replicas"] == [b_id]

        # b upgraded (its row advertises parking): the next card parks again
        await advertise(b, a, "park")
        third = await card_in(a, "m3", "C3")
        assert await a.app.store.parked.row(third) is not None
        assert [e["event"] for e in logs if e["event"] == "parking_on"] == ["parking_on"]
    doctor = await replicas_check(settings)
    assert doctor is not None and not doctor.warning

    # a stops: the cards asked while b did not park expire as with park = false; the one
    # asked once every replica parked stays open, its turn parked
    await replicas.stop(a)
    store = b.app.store
    assert await status_of(store, first) == (ApprovalStatus.EXPIRED, RuntimeReason.SHUTDOWN)
    assert await status_of(store, second) == (ApprovalStatus.EXPIRED, RuntimeReason.SHUTDOWN)
    assert await status_of(store, third) == (ApprovalStatus.PENDING, None)
    assert await store.parked.row(third) is not None


async def test_a_replica_that_does_not_park_joining_after_the_card_keeps_the_turn_from_parking(
    replicas: Replicas,
) -> None:
    # the card waits in its turn until the stop, which is when the turn would park
    waiting = {"approval": {"timeout_s": 60.0, "wait_in_turn_s": 60.0}, "replicas": STEADY}
    a = await replicas.start("a", extra=waiting)
    b = await replicas.start("b", extra=waiting)
    approval_id = await card_in(a, "m1", "C1")
    # posted while every live replica parked: the turn recorded itself to park
    row = await a.app.store.parked.row(approval_id)
    assert row is not None and row.state is ParkState.WAITING

    # b now stands for a live replica of a release that does not park (a rolling upgrade
    # started, or was rolled back, while the card waited): asked again as the turn parks
    await advertise(b, a, "")
    with capture_logs() as logs:
        await replicas.stop(a)
    # as with park = false: the stop expired the card; nothing was left parked
    store = b.app.store
    assert await status_of(store, approval_id) == (ApprovalStatus.EXPIRED, RuntimeReason.SHUTDOWN)
    assert await store.parked.row(approval_id) is None
    events = [e["event"] for e in logs]
    assert "approval_not_parked" in events and "approval_parked" not in events


async def test_a_card_whose_turn_may_not_park_any_more_waits_in_its_turn(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    b = await replicas.start("b", extra=PARK_SOON)
    # the card's post is held on the platform until b stands for a release that does not
    # park: the turn recorded itself to park before the post, and would park as soon as
    # the post returns (or 0.2 s after the card was asked, whichever is later)
    posting, let_post = asyncio.Event(), asyncio.Event()
    asked: list[str] = []
    post = a.channel.post_approval_card

    async def held_post(target: DeliveryTarget, card: ApprovalCard) -> SentMessage:
        asked.append(card.approval_id)
        posting.set()
        await let_post.wait()
        return await post(target, card)

    a.channel.post_approval_card = held_post  # type: ignore[method-assign]
    await a.deliver(message("m1 deploy please", "1"))
    await asyncio.wait_for(posting.wait(), WAIT_S)
    [approval_id] = asked
    row = await a.app.store.parked.row(approval_id)
    assert row is not None and row.state is ParkState.WAITING

    with capture_logs() as logs:
        await advertise(b, a, "")
        let_post.set()
        card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
        async with asyncio.timeout(WAIT_S):
            while not any(e["event"] == "approval_not_parked" for e in logs):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
    # not parked: its record went, the card is still open and the turn waits on it
    assert await a.app.store.parked.row(approval_id) is None
    assert await status_of(a.app.store, approval_id) == (ApprovalStatus.PENDING, None)
    assert not any(e["event"] == "approval_parked" for e in logs)
    # answered, it runs in that same turn: one run, one answer
    click = a.channel.click(card, APPROVER)
    assert await clicked(a.app.approvals, click) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("a", {"version": "2"})]
    assert answers(a, b) == ["done: deployed v2"]


async def test_a_replica_row_says_what_its_release_can_do(replicas: Replicas) -> None:
    a = await replicas.start("a", extra={"replicas": STEADY})
    rows = await a.app.store.replicas.all()
    assert [r.capabilities for r in rows] == [frozenset({"park"})]
    # a heartbeat keeps the row's capabilities as written (an older release writes none)
    record = dataclasses.replace(rows[0], capabilities=frozenset())
    await a.app.store.replicas.register(record)
    assert [r.capabilities for r in await a.app.store.replicas.all()] == [frozenset({"park"})]
