"""Parking (docs/approvals.md, "Parking and resumption"), with Apps over one real PostgreSQL
database and the in-process channel: a turn whose call waits on a card parks when its
process stops (cleanly, or killed) or after ``approval.wait_in_turn_s``; the card stays open;
answered on the original card, or with ``hatchway approvals approve``, on whatever process
runs then, the tool runs once and the answer arrives once, in the original conversation.
With ``approval.park = false`` a stop expires the card, as before."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.approval.reasons import RuntimeReason
from bot.channel import CardState, ClickVerdict
from bot.store import InboxStatus, Store
from bot.store.approvals import ApprovalStatus
from bot.store.parked import ParkState
from tests.approval.conftest import (
    KEY,
    PARK_SOON,
    WAIT_S,
    answers,
    assert_nothing_ran,
    parked_card,
    status_of,
    until_inbox,
    until_state,
)
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, SLACK, Replicas, message


async def inbox_status(store: Store) -> InboxStatus:
    entry = await store.inbox.get(KEY)
    assert entry is not None
    return entry.status


async def test_a_stop_parks_and_a_click_on_the_original_card_resumes_after_the_restart(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await replicas.stop(a)

    b = await replicas.start("b")
    store = b.app.store
    assert await status_of(store, approval_id) == (ApprovalStatus.PENDING, None)
    assert await inbox_status(store) is InboxStatus.PARKED
    # nobody was told to ask again, and the card was not closed
    assert not [t for t in a.channel.texts + b.channel.texts if "ask again" in t]
    assert all(c.state is not CardState.EXPIRED for _, c in a.channel.edits)
    history = await store.history.load(f"{SLACK}:C1")
    assert "waiting for approval since" in history[-1].content

    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("b", {"version": "2"})]
    assert answers(b) == ["done: deployed v2"]
    assert await status_of(store, approval_id) == (ApprovalStatus.APPROVED, "click")
    await until_inbox(store, InboxStatus.DONE)
    assert await store.parked.rows() == []
    # the original card shows the outcome (an edit of its message)
    assert [(mid, c.state) for mid, c in b.channel.edits] == [(card.message_id, CardState.APPROVED)]
    # a second click decides nothing and resumes nothing
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is (
        ClickVerdict.ALREADY_DECIDED
    )
    assert replicas.deployed == [("b", {"version": "2"})]


async def test_a_killed_turn_is_parked_at_the_next_start_and_the_cli_resumes_it(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a")
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await replicas.crash(a)

    b = await replicas.start("b")
    store = b.app.store
    await until_state(store, approval_id)
    assert await inbox_status(store) is InboxStatus.PARKED
    assert await status_of(store, approval_id) == (ApprovalStatus.PENDING, None)
    verdict = await b.app.approvals.decide_from_cli(approval_id, True, "operator:root")
    assert verdict is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("b", {"version": "2"})]
    assert answers(b) == ["done: deployed v2"]
    assert not [t for t in b.channel.texts if "ask again" in t]


async def test_a_turn_parks_after_wait_in_turn_and_its_denial_reaches_the_model(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    # no stop: the turn parks by itself once it has waited wait_in_turn_s
    card = await parked_card(a)
    approval_id = card.card.approval_id
    assert await inbox_status(a.app.store) is InboxStatus.PARKED
    verdict = await a.app.approvals.decide_from_cli(approval_id, False, "operator:root")
    assert verdict is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: Not executed", within_s=WAIT_S)
    assert replicas.deployed == []


async def test_without_parking_a_stop_expires_the_card_as_before(replicas: Replicas) -> None:
    no_park = {"approval": {"timeout_s": 60.0, "park": False}}
    a = await replicas.start("a", extra=no_park)
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await replicas.stop(a)
    b = await replicas.start("b", extra=no_park)
    assert await status_of(b.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.SHUTDOWN,
    )
    assert await b.app.store.parked.rows() == []


async def test_stop_closes_a_parked_card_as_cancelled(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await a.deliver(message("/stop", "2"))
    await a.channel.wait_for("request waiting for approval was cancelled", within_s=WAIT_S)
    store = a.app.store
    assert await status_of(store, approval_id) == (ApprovalStatus.EXPIRED, RuntimeReason.CANCELLED)
    assert await inbox_status(store) is InboxStatus.FAILED
    assert await store.parked.rows() == []
    # the card says so, and a late click runs nothing
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is ClickVerdict.UNKNOWN
    await assert_nothing_ran(replicas, a, card)


async def test_a_sweep_while_a_stop_closes_the_card_leaves_the_turn_to_the_stop(
    replicas: Replicas,
) -> None:
    """``/stop`` expires a parked card, then edits it: a resumption sweep in between (its
    expiry nudges one) finds the row taken and neither edits the card again nor resumes the
    turn the stop ended."""
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    store = a.app.store
    editing, let_go = asyncio.Event(), asyncio.Event()
    update = a.channel.update_approval_card

    async def held_update(sent: Any, shown: Any) -> None:
        editing.set()
        await let_go.wait()
        await update(sent, shown)

    a.channel.update_approval_card = held_update  # type: ignore[method-assign]
    stopping = asyncio.create_task(a.deliver(message("/stop", "2")))
    try:
        await asyncio.wait_for(editing.wait(), WAIT_S)  # expired, its edit under way
        assert await status_of(store, card.card.approval_id) == (
            ApprovalStatus.EXPIRED,
            RuntimeReason.CANCELLED,
        )
        assert await asyncio.wait_for(a.app.resumptions.sweep(), WAIT_S) == 0
    finally:
        let_go.set()
    await a.channel.wait_for("request waiting for approval was cancelled", within_s=WAIT_S)
    await stopping
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    assert await store.parked.rows() == []
    assert await inbox_status(store) is InboxStatus.FAILED
    await assert_nothing_ran(replicas, a, card)


async def test_a_stop_while_the_parked_turn_is_still_ending_says_the_card_was_cancelled(
    replicas: Replicas,
) -> None:
    """The turn's park is committed but its task has not ended yet (a busy machine can hold
    it there): ``/stop`` finds it "running" and closes its card, and still says so."""
    a = await replicas.start("a", extra=PARK_SOON)
    store = a.app.store
    committed, let_go = asyncio.Event(), asyncio.Event()
    commit = store.commit

    async def holding_after_the_park(work: Any, **kwargs: Any) -> Any:
        result = await commit(work, **kwargs)
        if not committed.is_set() and await store.parked.rows(states=(ParkState.PARKED,)):
            committed.set()  # the park's own commit: the only write of a parked row
            await let_go.wait()
        return result

    store.commit = holding_after_the_park  # type: ignore[method-assign]
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    await asyncio.wait_for(committed.wait(), WAIT_S)
    await a.deliver(message("/stop", "2"))
    try:
        await a.channel.wait_for("request waiting for approval was cancelled", within_s=WAIT_S)
    finally:
        let_go.set()
    assert await status_of(store, card.card.approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.CANCELLED,
    )
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    assert replicas.deployed == []
