"""Reminders on a parked turn's card (issue 39 §2 with §1): the turn has parked, no coroutine
waits on the card, and its reminders still reach the card's conversation; after a restart
(a process with a new replica id on the shared PostgreSQL database) too. Apps with the
in-process channel; the reminder sweep runs as the daemon runs it."""

from __future__ import annotations

from bot.channel import ClickVerdict
from bot.store.approvals import ApprovalStatus
from tests.approval.conftest import WAIT_S, parked_card, status_of
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replicas

REMINDING = {
    "approval": {
        "timeout_s": 3600.0,
        "wait_in_turn_s": 0.2,
        "remind_after_s": 1.0,
        "remind_max": 50,
    }
}


async def test_a_parked_cards_reminders_reach_its_conversation_before_and_after_a_restart(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=REMINDING)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    # the turn has parked: the next reminder still reaches the card's conversation
    earlier = len([t for t in a.channel.texts if t.startswith("⏰ Reminder")])
    target = await a.channel.wait_for(f"⏰ Reminder {earlier + 1}/", within_s=WAIT_S)
    assert target.conversation_id == "C1"
    await replicas.stop(a)

    b = await replicas.start("b", extra=REMINDING)  # another replica id
    target = await b.channel.wait_for("⏰ Reminder", within_s=WAIT_S)
    assert target.conversation_id == "C1"
    assert await status_of(b.app.store, approval_id) == (ApprovalStatus.PENDING, None)
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)
