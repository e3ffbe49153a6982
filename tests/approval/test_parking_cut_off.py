"""A resumption cut off between running the tool and recording its result, on a replica that
died (docs/approvals.md, "Parking and resumption"), with Apps over one real PostgreSQL
database: the replica that takes the session over parks the turn again, marked cut off, and
resumes it once more; a tool that is not ``retry_safe`` is not run again (its result is
unknown, and the model is told so), a ``retry_safe`` one runs again; one answer either way.
The daemon's own kill at that point, on each platform: tests/reliability/
test_parked_resumer_kill.py."""

from __future__ import annotations

import pytest

from bot.store import InboxStatus
from bot.store.parked import ParkState
from bot.tools.outcome import RESULT_UNKNOWN
from tests.approval.conftest import KEY, PARK_SOON, answers, parked_card, until_inbox
from tests.fakes.replica_apps import APPROVER, Replicas


@pytest.mark.parametrize("retry_safe", [False, True], ids=["not-retry-safe", "retry-safe"])
async def test_a_resumption_cut_off_on_a_dead_replica_resumes_once_more(
    replicas: Replicas, retry_safe: bool
) -> None:
    a = await replicas.start("a", extra=PARK_SOON, retry_safe=retry_safe)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    keeper = a.app.keeper
    assert keeper is not None
    db = a.app.store.db
    # what a kill of a between running the approved deploy and recording its result leaves
    # (the daemon's own kill at that point: tests/reliability/test_parked_resumer_kill.py):
    # the card approved, the row claimed by a, the entry processing, nothing recorded
    await db.execute(
        "UPDATE approvals SET status = 'approved', decided_by = ?, decided_at = created_at,"
        " reason = 'click' WHERE id = ?",
        (APPROVER, approval_id),
    )
    await db.execute(
        "UPDATE parked_turns SET state = ?, owner = ? WHERE approval_id = ?",
        (ParkState.RESUMING, keeper.replica_id, approval_id),
    )
    await db.execute(
        "UPDATE inbox SET status = ? WHERE channel = ? AND message_id = ?",
        (InboxStatus.PROCESSING, KEY.channel, KEY.message_id),
    )
    replicas.deployed.append(("a", {"version": "2"}))  # the run the kill cut off
    await replicas.crash(a)

    b = await replicas.start("b", extra=PARK_SOON, retry_safe=retry_safe)
    store = b.app.store
    await until_inbox(store, InboxStatus.DONE)
    assert await store.parked.rows() == []
    runs = [("a", {"version": "2"})] + ([("b", {"version": "2"})] if retry_safe else [])
    assert replicas.deployed == runs
    assert not [t for t in b.channel.texts if "ask again" in t]
    [answer] = answers(a, b)
    deploys = await store.tool_calls.for_call("call-m1")
    if retry_safe:
        assert answer == "done: deployed v2"
        assert [r.status for r in deploys] == ["executed"]
    else:
        assert answer == "done: " + RESULT_UNKNOWN.format(tool="deploy")
        assert [r.status for r in deploys] == ["interrupted"]
