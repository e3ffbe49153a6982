"""A turn whose budget (``turn_timeout_s``) runs out while it waits on an approval card parks
instead of being cancelled (issue 39: parked time never counts against the budget, and with
``wait_in_turn_s`` = ``turn_timeout_s`` the two used to race), with Apps over one real
PostgreSQL database and the in-process channel."""

from __future__ import annotations

from bot.agent.loop import BUDGET_MESSAGE
from bot.channel import ClickVerdict
from bot.store import InboxStatus
from bot.store.approvals import ApprovalStatus
from tests.approval.conftest import KEY, WAIT_S, answers, parked_card, status_of
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replicas

#: The card outlives the in-turn wait, which outlives the turn's budget: the budget comes
#: first. Long enough for a loaded machine to reach the card within it.
BUDGET_FIRST = {
    "agent": {"turn_timeout_s": 15.0, "parallel_tools": False},
    "approval": {"timeout_s": 600.0, "wait_in_turn_s": 300.0},
}


async def test_a_turn_whose_budget_runs_out_while_its_card_waits_parks(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=BUDGET_FIRST)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    store = a.app.store
    # parked, not cancelled: the card is still open, nobody was told the budget ran out
    assert await status_of(store, approval_id) == (ApprovalStatus.PENDING, None)
    entry = await store.inbox.get(KEY)
    assert entry is not None and entry.status is InboxStatus.PARKED
    assert BUDGET_MESSAGE not in a.channel.texts

    # the resumption gets a fresh budget: the approved call runs once, the answer comes once
    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("a", {"version": "2"})]
    assert answers(a) == ["done: deployed v2"]
    assert BUDGET_MESSAGE not in a.channel.texts


async def test_a_resumed_turn_whose_usage_budget_was_spent_runs_the_call_and_answers_the_notice(
    replicas: Replicas,
) -> None:
    # the first model call of the turn uses up the requester's daily tokens
    spent_soon = {
        "approval": {"timeout_s": 600.0, "wait_in_turn_s": 0.2},
        "budgets": {"per_user": {"daily_tokens": 1}},
    }
    a = await replicas.start("a", extra=spent_soon)
    card = await parked_card(a)

    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await a.channel.wait_for("daily budget is used up", within_s=WAIT_S)
    # the approved call ran, once; the model was not called again for the answer
    assert replicas.deployed == [("a", {"version": "2"})]
    assert replicas.log == [("a", "m1")]
    assert answers(a) == []
