"""Two keys on every platform: one case, three platforms (:mod:`.driver`). A call a quorum
rule matches needs two distinct approvers; the card shows the count after each approval
(every platform, through the one card flow); the requester's tap never counts; the same
approver's second tap counts once; the second approver decides."""

from __future__ import annotations

from bot.cards import CardVerb
from bot.channel import ClickVerdict
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from tests.channels.contract.driver import CardDriver

KUBECTL = {"command": "kubectl delete pod web-1"}
QUORUM = {
    "rules": [{"tools": ["shell"], "arguments": {"command": ["*kubectl delete*"]}, "approvals": 2}]
}


async def two_keys(cards: CardDriver) -> None:
    """The channel needs two approvals for ``kubectl delete``; the stranger becomes a second
    approver (a new process with that configuration, on the same database)."""
    table = dict(cards.process.table)
    table["approvers"] = [*table["approvers"], cards.stranger]  # type: ignore[misc]
    table["approval"] = {"quorum": QUORUM}
    cards.process.table = table
    await cards.restart()


async def test_two_distinct_approvers_and_never_the_requester(cards: CardDriver) -> None:
    await two_keys(cards)
    card = await cards.ask(KUBECTL)
    assert "0 of 2 approvals" in cards.shown(card).text
    first = await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert first.told == ("Approval 1 of 2 recorded; waiting for one more.",)
    # Slack's blocks are shown as JSON, so the name and its mark are checked in the core
    assert "1 of 2 approvals: " in cards.shown(card).text
    again = await cards.press(card, CardVerb.APPROVE, cards.approver)
    assert again.told == ("Your approval 1 of 2 recorded; waiting for one more (counted once).",)
    own = await cards.press(card, CardVerb.APPROVE, cards.requester)
    assert own.told == (ClickVerdict.SELF_APPROVAL.message,)
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and row.status is ApprovalStatus.PENDING
    assert [v.voter for v in row.votes] == [cards.approver]
    assert card.waiting()
    await cards.press(card, CardVerb.APPROVE, cards.stranger)
    decision = await card.decision()
    assert (decision.verdict, decision.decided_by) == (Decision.APPROVED, cards.stranger)
    final = cards.shown(card)
    assert "2 of 2 approvals" in final.text and final.buttons == set()
    audit = [(a.decision, a.decided_by) for a in await cards.store.audit.since()]
    assert audit == [
        ("voted", cards.approver),
        ("click_refused:approve", cards.requester),
        ("voted", cards.stranger),
        ("approved", cards.stranger),
    ]


async def test_any_deny_denies_a_quorum(cards: CardDriver) -> None:
    await two_keys(cards)
    card = await cards.ask(KUBECTL)
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    await cards.press(card, CardVerb.DENY, cards.stranger)
    assert (await card.decision()).verdict is Decision.DENIED


async def test_a_quorum_card_offers_no_always_and_an_old_one_counts_nothing(
    cards: CardDriver,
) -> None:
    """Always (or a grant choice) would make no grant on a quorum card: none is drawn, on
    the card as first posted nor after an approval; the Always a card drawn before carried
    is refused privately, audited, and counts nothing, not even as an approval."""
    await two_keys(cards)
    card = await cards.ask(KUBECTL)
    shown = cards.shown(card)
    assert {CardVerb.APPROVE, CardVerb.DENY} <= shown.buttons
    assert CardVerb.ALWAYS not in shown.buttons and shown.choices == ()
    old = await cards.press(card, CardVerb.ALWAYS, cards.approver)
    assert old.told == (ClickVerdict.NO_GRANT_HERE.message,)
    row = await cards.store.approvals.get(card.approval_id)
    assert row is not None and row.status is ApprovalStatus.PENDING and row.votes == ()
    await cards.press(card, CardVerb.APPROVE, cards.approver)
    after = cards.shown(card)
    assert CardVerb.ALWAYS not in after.buttons and after.choices == ()
    await cards.press(card, CardVerb.APPROVE, cards.stranger)
    assert (await card.decision()).verdict is Decision.APPROVED
    assert await cards.store.grants.list(now=cards.clock()) == []
    audit = [(a.decision, a.decided_by, a.reason) for a in await cards.store.audit.since()]
    assert audit[0] == ("click_refused:always", cards.approver, "no_grant_here")
    assert [a[:2] for a in audit[1:]] == [
        ("voted", cards.approver),
        ("voted", cards.stranger),
        ("approved", cards.stranger),
    ]
