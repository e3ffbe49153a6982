"""A parked turn's progress line (issue 39 §3), with Apps over one real PostgreSQL database
and the in-process channel on a platform that edits messages: the progress message that
showed "🔐 waiting for approval" is kept with the parked turn, and its resumption, after a
restart, edits that message to the outcome instead of leaving it waiting and sending a new
one."""

from __future__ import annotations

import asyncio
import dataclasses

from bot.channel import ApprovalChoice, ClickVerdict
from bot.envelope import IngressEnvelope
from bot.progress import not_approved_line, waiting_line
from bot.store import Store
from bot.store.parked import ParkRecord, ParkState, ProgressRef
from tests.approval.conftest import PARK_SOON, WAIT_S
from tests.fakes.channel import PostedCard, clicked
from tests.fakes.replica_apps import APPROVER, Replica, Replicas, message


def editable(text: str, message_id: str) -> IngressEnvelope:
    envelope = message(text, message_id)
    caps = dataclasses.replace(envelope.capabilities, can_edit=True)
    return dataclasses.replace(envelope, capabilities=caps)


async def parked_with_progress(store: Store, approval_id: str) -> ParkRecord:
    async with asyncio.timeout(WAIT_S):
        while True:
            row = await store.parked.row(approval_id)
            if row is not None and row.state is ParkState.PARKED:
                record = await store.parked.get(approval_id)
                if record is not None and record.progress is not None:
                    return record
            await asyncio.sleep(0.05)


def last_edit(replica: Replica, message_id: str) -> str:
    edits = [text for mid, text in replica.channel.text_edits if mid == message_id]
    assert edits, f"{message_id} was never edited"
    return edits[-1]


async def parked_then_restarted(replicas: Replicas) -> tuple[Replica, ProgressRef, PostedCard]:
    a = await replicas.start("a", extra=PARK_SOON)
    await a.deliver(editable("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    record = await parked_with_progress(a.app.store, approval_id)
    progress = record.progress
    assert progress is not None
    # the progress message a sent is the one kept, and it shows the wait
    assert waiting_line("deploy") in a.channel.texts
    assert ("approval:deploy", waiting_line("deploy")) in progress.lines
    await replicas.stop(a)
    b = await replicas.start("b", extra=PARK_SOON)
    return b, progress, card


async def test_a_resumed_turn_closes_the_progress_line_of_its_parked_turn(
    replicas: Replicas,
) -> None:
    b, progress, card = await parked_then_restarted(replicas)
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is (
        ClickVerdict.ACCEPTED
    )
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert [args for _, args in replicas.deployed] == [{"version": "2"}]
    # the original progress message now shows the call ran; no new progress line was sent
    closed = last_edit(b, progress.message_id)
    assert "✅ deploy" in closed and "🔐" not in closed
    assert b.channel.texts == ["done: deployed v2"]


async def test_a_denied_parked_call_shows_not_approved_on_the_original_progress_line(
    replicas: Replicas,
) -> None:
    b, progress, card = await parked_then_restarted(replicas)
    deny = b.channel.click(card, APPROVER, ApprovalChoice.DENY)
    assert await clicked(b.app.approvals, deny) is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: Not executed", within_s=WAIT_S)
    assert replicas.deployed == []
    assert last_edit(b, progress.message_id) == not_approved_line("deploy")
    assert [t for t in b.channel.texts if not t.startswith("done:")] == []


def test_a_kept_progress_message_is_bounded_and_a_bad_one_is_ignored() -> None:
    lines = [(f"call-{i}", "x" * 10_000) for i in range(500)]
    kept = ProgressRef.bounded("m1", lines)
    assert len(kept.lines) == 40 and kept.lines[-1][0] == "call-499"
    assert all(len(line) == 400 for _, line in kept.lines)
    assert ProgressRef.from_json(kept.to_json()) == kept
    # a body of an older release has none; a mangled one is only a lost nicety
    for bad in (None, "m1", {"lines": []}, {"message_id": "", "lines": []}, {"message_id": 3}):
        assert ProgressRef.from_json(bad) is None
    odd = ProgressRef.from_json({"message_id": "m1", "lines": [["k", "v"], "x", [1]]})
    assert odd == ProgressRef(message_id="m1", lines=(("k", "v"),))
