"""No card that nobody can answer: who can reach a card is decided per envelope.

A direct message is seen by the requester alone; a group is asked about through the channel
(:class:`bot.approval.reach.MemberLookup`); approvers' DM copies are the last way out. When
nobody eligible is left, the call is refused at once with a reason the model can relay.
"""

from __future__ import annotations

import asyncio

import pytest

from bot.approval.reasons import RuntimeReason
from bot.channel import ClickVerdict
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from tests.approval.conftest import (
    APPROVER,
    REQUESTER,
    SLACK,
    asking,
    make_envelope,
    make_request,
    make_settings,
    service_for,
)
from tests.fakes.channel import FakeChannel, MemberChannel, clicked


async def _refused_at_once(store: Store, decision_reason: RuntimeReason | None) -> None:
    assert decision_reason is RuntimeReason.NOBODY_REACHABLE
    rows = await store.audit.since()
    assert [(r.decision, r.decided_by, r.reason) for r in rows] == [
        ("auto_denied", "runtime", "no approver reachable")
    ]


@pytest.mark.parametrize(
    ("approvers", "self_approval"),
    [
        pytest.param([REQUESTER], False, id="the requester is the only approver"),
        pytest.param([APPROVER], False, id="the approver is not in this DM"),
        pytest.param([APPROVER], True, id="self-approval does not help a non-approver"),
    ],
)
async def test_a_dm_nobody_else_sees_is_refused_at_once(
    store: Store, channel: FakeChannel, approvers: list[str], self_approval: bool
) -> None:
    settings = make_settings(
        {"timeout_s": 300, "self_approval": self_approval}, approvers=approvers
    )
    service = service_for(settings, store, channel)
    async with asyncio.timeout(5):  # would wait 300 s if a card were posted
        decision = await service.ask(make_request(envelope=make_envelope(is_group=False)))
    assert decision.verdict is Decision.AUTO_DENIED
    wording = decision.runtime_reason.wording if decision.runtime_reason else ""
    assert "no approver can see this conversation" in wording
    assert "denied by" not in wording.lower()
    assert channel.posted == []
    await _refused_at_once(store, decision.runtime_reason)


async def test_the_only_approver_may_approve_their_own_dm_with_self_approval(
    store: Store, channel: FakeChannel
) -> None:
    """README's minimal setup: one person is both the allowed user and the approver."""
    settings = make_settings({"self_approval": True}, approvers=[REQUESTER])
    service = service_for(settings, store, channel)
    request = make_request(envelope=make_envelope(is_group=False))
    async with asking(service, store, channel, request) as (posted, task):
        assert await clicked(service, channel.click(posted, REQUESTER)) is ClickVerdict.ACCEPTED
    assert task.result().verdict is Decision.APPROVED


async def test_a_dm_reaches_an_approver_through_their_own_dm(
    store: Store, channel: FakeChannel
) -> None:
    settings = make_settings({"dm_approvers": True}, approvers=[APPROVER, REQUESTER])
    service = service_for(settings, store, channel)
    request = make_request(envelope=make_envelope(is_group=False))
    async with asking(service, store, channel, request) as (_, task):
        copy = await channel.card_to(APPROVER)
        assert await clicked(service, channel.click(copy, APPROVER)) is ClickVerdict.ACCEPTED
    assert task.result().verdict is Decision.APPROVED
    # one copy for the approver, saying where it was asked; the requester's own DM gets a
    # notice that it waits, never a card whose buttons they cannot use
    assert [p.target.conversation_id for p in channel.posted] == [APPROVER]
    assert channel.posted[0].card.asked_in.startswith("slack.team C1")
    [(where, notice)] = channel.sent
    assert where.conversation_id == "C1"
    assert notice.startswith("🔐 shell waits for an approver")


async def test_when_no_dm_copy_can_be_posted_the_request_ends_at_once(
    store: Store, channel: FakeChannel
) -> None:
    """A Telegram bot cannot DM a user who never started it; Discord users close DMs."""
    channel.closed_dms = {APPROVER}
    settings = make_settings({"dm_approvers": True, "timeout_s": 300}, approvers=[APPROVER])
    service = service_for(settings, store, channel)
    async with asyncio.timeout(5):
        decision = await service.ask(make_request(envelope=make_envelope(is_group=False)))
    assert decision.runtime_reason is RuntimeReason.NOBODY_REACHABLE
    assert channel.posted == []  # no card: the requester was only told it waits
    [row] = await store.approvals.list()
    assert row.status is ApprovalStatus.EXPIRED
    assert row.reason == "no approver reachable"


async def test_a_group_without_any_approver_in_it_is_refused_at_once(store: Store) -> None:
    channel = MemberChannel(SLACK, {"C1": {REQUESTER, "U_BOB"}})
    service = service_for(make_settings({"timeout_s": 300}), store, channel)
    async with asyncio.timeout(5):
        decision = await service.ask(make_request())
    assert decision.verdict is Decision.AUTO_DENIED
    assert channel.posted == []
    assert channel.asked == [("C1", APPROVER)]
    await _refused_at_once(store, decision.runtime_reason)


@pytest.mark.parametrize(
    "members",
    [
        pytest.param({"C1": {REQUESTER, APPROVER}}, id="the approver is a member"),
        pytest.param({}, id="the platform cannot tell"),
    ],
)
async def test_a_group_an_approver_can_see_gets_a_card(
    store: Store, members: dict[str, set[str]]
) -> None:
    channel = MemberChannel(SLACK, members)
    service = service_for(make_settings(), store, channel)
    async with asking(service, store, channel) as (posted, task):
        await clicked(service, channel.click(posted, APPROVER))
    assert task.result().verdict is Decision.APPROVED


async def test_a_group_without_approvers_still_reaches_them_by_dm(store: Store) -> None:
    channel = MemberChannel(SLACK, {"C1": {REQUESTER}})
    service = service_for(make_settings({"dm_approvers": True}), store, channel)
    async with asking(service, store, channel) as (_, task):
        copy = await channel.card_to(APPROVER)
        await clicked(service, channel.click(copy, APPROVER))
    assert task.result().verdict is Decision.APPROVED
