"""A parked turn's card whose place was never stored (the daemon killed between posting it
and storing its message id): a decision made elsewhere (the CLI, the console, the card's
expiry) cannot edit that copy, and no platform lets the bot find it again for certain, so
the conversation is told the outcome in a new message (docs/approvals.md). Apps over one
real PostgreSQL database and the in-process channel; the kill's leftover is the row with
no card places, as a kill leaves it."""

from __future__ import annotations

from bot.channel import ClickVerdict
from tests.approval.conftest import PARK_SOON, WAIT_S, parked_card, until_closed
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replicas

NOTICE = "🔐 The approval request for deploy was"


async def test_a_cli_decision_on_a_card_whose_place_was_lost_is_told_in_a_new_message(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    store = a.app.store
    await store.db.execute("UPDATE approvals SET card_refs = '[]' WHERE id = ?", (approval_id,))

    verdict = await a.app.approvals.decide_from_cli(approval_id, True, "operator:root")
    assert verdict is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    await until_closed(store, approval_id)
    told = [(t, x) for t, x in a.channel.sent if x.startswith(NOTICE)]
    assert [x for _, x in told] == [
        f"{NOTICE} approved by operator:root. (Its card could not be updated.)"
    ]
    [(target, _)] = told
    assert target.conversation_id == "C1"
    assert a.channel.edits == []  # nothing knew where the card was
    assert replicas.deployed == [("a", {"version": "2"})]


async def test_a_click_on_such_a_card_edits_it_and_needs_no_message(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    store = a.app.store
    await store.db.execute("UPDATE approvals SET card_refs = '[]' WHERE id = ?", (approval_id,))

    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    await until_closed(store, approval_id)
    assert [mid for mid, _ in a.channel.edits] == [card.message_id]
    assert not [x for x in a.channel.texts if x.startswith(NOTICE)]
