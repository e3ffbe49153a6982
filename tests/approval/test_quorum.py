"""Two keys (:mod:`bot.approval.quorum`) through the card flow, against the in-process fake
channel: a call a quorum rule matches needs that many distinct approvers; the requester's
tap never counts (``self_approval`` or not); the same person twice counts once, from a card
or the CLI; any deny denies; a grant does not let it skip the quorum unless
``grants_satisfy``, and Always or a grant choice counts only where it makes a grant (the
approval that completes the quorum, with ``grants_satisfy``), else is refused; each approval
is its own audit row and every card copy shows the count.
The rules' matching is checked here too; ``tests/commands/test_policy_explain.py`` compares
the verdict with ``hatchway policy explain``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from bot.approval.gate import Assessment
from bot.approval.quorum import quorum_for
from bot.approval.reasons import PolicyReason, RuntimeReason
from bot.cards import Actor, CardAction, CardReplyKind, CardVerb
from bot.channel import ApprovalChoice, CardState, ClickVerdict
from bot.channel_config import QuorumConfig
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from bot.store.grants import NewGrant
from tests.approval.conftest import (
    APPROVER,
    REQUESTER,
    asking,
    make_envelope,
    make_request,
    make_settings,
    service_for,
)
from tests.fakes.channel import FakeChannel, FakeSurface, clicked

SECOND = "U_BOB"
THIRD = "U_CAROL"
KUBECTL = {"tools": ["shell"], "arguments": {"command": ["*kubectl delete*"]}, "approvals": 2}


def quorum_settings(
    rule: dict[str, Any] | None = None, *, grants_satisfy: bool = False, **policy: Any
) -> Any:
    quorum = {"rules": [rule or KUBECTL], "grants_satisfy": grants_satisfy}
    return make_settings(
        {"quorum": quorum, **policy}, approvers=[APPROVER, SECOND, THIRD, REQUESTER]
    )


def kubectl(command: str = "kubectl delete pod web-1") -> Any:
    return make_request(arguments={"command": command})


# -- which calls need a quorum ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "needed"),
    [
        ("kubectl delete pod web-1", 2),
        ("  kubectl \t delete\npod web-1", 2),  # whitespace folded
        ("cd /srv && kubectl delete ns x", 2),
        ("kubectl get pods", None),
        ("KUBECTL delete pod", None),  # case-sensitive, as the shell is
    ],
)
def test_argument_patterns_match_the_whole_value_with_whitespace_folded(
    command: str, needed: int | None
) -> None:
    quorum = QuorumConfig.model_validate({"rules": [KUBECTL]})
    need = quorum_for(quorum, "shell", {"command": command})
    assert (need.approvals if need else None) == needed


def test_the_strictest_matching_rule_wins_and_a_missing_argument_matches_nothing() -> None:
    quorum = QuorumConfig.model_validate(
        {"rules": [KUBECTL, {"tools": ["sh*"], "approvals": 3}, {"tools": ["x"], "approvals": 4}]}
    )
    need = quorum_for(quorum, "shell", {"command": "kubectl delete pod"})
    assert need is not None and (need.approvals, need.index) == (3, 1)
    assert quorum_for(QuorumConfig.model_validate({"rules": [KUBECTL]}), "shell", {}) is None


@pytest.mark.parametrize(
    "rule",
    [
        {"tools": ["shell"], "approvals": 1},
        {"tools": [], "approvals": 2},
        {"tools": ["shell"], "arguments": {"command": []}, "approvals": 2},
        {"tools": ["shell"], "arguments": {"command": ["*" * 11]}, "approvals": 2},
        {"tools": ["shell"], "arguments": {"command": ["a" * 201]}, "approvals": 2},
        {"tools": ["shell"], "approvals": 2, "mode": "regex"},
    ],
    ids=["one", "no tools", "no patterns", "many stars", "long", "unknown key"],
)
def test_a_bad_rule_is_a_config_error(rule: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        QuorumConfig.model_validate({"rules": [rule]})


async def test_the_policy_asks_a_quorum_even_under_full_and_always_ask(store: Store) -> None:
    settings = quorum_settings(level="full", auto_approve=["shell"])
    service = service_for(settings, store)
    result = await service.assess(kubectl())
    assert (result.assessment, result.reason, result.quorum) == (
        Assessment.ASK,
        PolicyReason.QUORUM,
        2,
    )
    assert (await service.assess(kubectl("kubectl get pods"))).assessment is Assessment.ALLOW


@pytest.mark.parametrize("grants_satisfy", [False, True])
async def test_a_grant_satisfies_a_quorum_only_when_the_policy_says_so(
    store: Store, grants_satisfy: bool
) -> None:
    await store.grants.create(
        NewGrant(
            tool="shell",
            scope="conversation",
            scope_key="slack.team:C1",
            granted_by=APPROVER,
            created_at=0.0,
            expires_at=None,
        )
    )
    service = service_for(quorum_settings(grants_satisfy=grants_satisfy), store)
    result = await service.assess(kubectl())
    expected = (
        (Assessment.ALLOW, PolicyReason.GRANT)
        if grants_satisfy
        else (
            Assessment.ASK,
            PolicyReason.QUORUM,
        )
    )
    assert (result.assessment, result.reason) == expected


# -- the card flow ------------------------------------------------------------------------------


async def test_two_distinct_approvers_decide_and_each_is_audited(
    store: Store, channel: FakeChannel
) -> None:
    # "all": the fake channel cannot say who sees the conversation, and "members" (the
    # default) names only those the platform confirms
    service = service_for(quorum_settings(name_approvers="all"), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        assert "0 of 2 approvals" in posted.card.render_text()
        first = channel.click(posted, APPROVER)
        surface = FakeSurface()
        assert await clicked(service, first, surface) is ClickVerdict.COUNTED
        (told,) = surface.told
        assert told.kind is CardReplyKind.TELL
        assert told.text == "Approval 1 of 2 recorded; waiting for one more."
        (_, edited), *_ = channel.edits
        assert edited.state is CardState.PENDING
        shown = edited.render_text()
        assert f"1 of 2 approvals: {APPROVER} ✓" in shown
        assert f"may approve: {SECOND}, {THIRD}" in shown  # never the requester
        assert "Can approve:" not in shown  # named once, on the quorum line
        assert not task.done()
        assert await clicked(service, channel.click(posted, SECOND)) is ClickVerdict.ACCEPTED
    decision = task.result()
    assert decision.verdict is Decision.APPROVED and decision.decided_by == SECOND
    rows = [(r.decision, r.decided_by, r.reason) for r in await store.audit.since()]
    assert rows == [
        ("voted", APPROVER, "click: approval 1 of 2"),
        ("voted", SECOND, "click: approval 2 of 2"),
        ("approved", SECOND, "click"),
    ]
    _, final = channel.edits[-1]
    assert final.state is CardState.APPROVED
    assert f"2 of 2 approvals: {APPROVER} ✓, {SECOND} ✓" in final.render_text()


@pytest.mark.parametrize("self_approval", [False, True])
async def test_the_requesters_tap_never_counts(
    store: Store, channel: FakeChannel, self_approval: bool
) -> None:
    service = service_for(quorum_settings(self_approval=self_approval), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        own = channel.click(posted, REQUESTER)
        assert await clicked(service, own) is ClickVerdict.SELF_APPROVAL
        assert await clicked(service, channel.click(posted, APPROVER)) is ClickVerdict.COUNTED
        assert await clicked(service, own) is ClickVerdict.SELF_APPROVAL
        row = await store.approvals.get(posted.card.approval_id)
        assert row is not None and row.status is ApprovalStatus.PENDING
        assert [v.voter for v in row.votes] == [APPROVER]
        assert await clicked(service, channel.click(posted, THIRD)) is ClickVerdict.ACCEPTED
    assert task.result().decided_by == THIRD


async def test_the_same_person_twice_counts_once(store: Store, channel: FakeChannel) -> None:
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        tap = channel.click(posted, APPROVER)
        assert await clicked(service, tap) is ClickVerdict.COUNTED
        surface = FakeSurface()
        # a replayed click, the console: still one person
        assert await clicked(service, tap, surface) is ClickVerdict.ALREADY_COUNTED
        assert surface.told[0].text == (
            "Your approval 1 of 2 recorded; waiting for one more (counted once)."
        )
        row = await store.approvals.get(posted.card.approval_id)
        assert row is not None and row.status is ApprovalStatus.PENDING and len(row.votes) == 1
        assert await clicked(service, channel.click(posted, SECOND)) is ClickVerdict.ACCEPTED
    assert task.result().allowed
    voted = [r for r in await store.audit.since() if r.decision == Decision.VOTED]
    assert len(voted) == 2


async def test_two_cli_approvals_by_the_same_operator_count_once(
    store: Store, channel: FakeChannel
) -> None:
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        approval_id = posted.card.approval_id
        first = await service.decide_from_cli(approval_id, True, "operator:alice")
        assert first is ClickVerdict.COUNTED
        # the CLI could not vouch for the name this time: the same operator all the same
        again = await service.decide_from_cli(approval_id, True, "operator:alice (unverified)")
        assert again is ClickVerdict.ALREADY_COUNTED
        assert not task.done()
        assert await clicked(service, channel.click(posted, SECOND)) is ClickVerdict.ACCEPTED
    assert task.result().decided_by == SECOND


async def test_any_deny_denies(store: Store, channel: FakeChannel) -> None:
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        assert await clicked(service, channel.click(posted, APPROVER)) is ClickVerdict.COUNTED
        deny = channel.click(posted, SECOND, ApprovalChoice.DENY)
        assert await clicked(service, deny) is ClickVerdict.ACCEPTED
        late = channel.click(posted, THIRD)
        assert await clicked(service, late) is ClickVerdict.ALREADY_DECIDED
    assert task.result().verdict is Decision.DENIED


def grant_pick(channel: FakeChannel, posted: Any, user_id: str, key: str) -> CardAction:
    """``user_id`` picks grant choice ``key`` on ``posted`` (a payload any card may carry)."""
    click = channel.click(posted, user_id, ApprovalChoice.ALWAYS)
    return dataclasses.replace(click, verb=CardVerb.GRANT, grant_choice=key)


async def refusals(store: Store) -> list[tuple[str, str, str]]:
    return [
        (r.decision, r.decided_by, r.reason)
        for r in await store.audit.since()
        if r.decision.startswith("click_refused")
    ]


async def test_a_quorum_card_offers_no_always_and_refuses_one_from_an_old_card(
    store: Store, channel: FakeChannel
) -> None:
    """Without ``grants_satisfy`` a quorum card never offers Always nor a grant choice (it
    would make no grant); one pressed anyway (a card drawn before, a replayed payload) is
    refused, audited, and counts nothing: not even as a plain approval."""
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        assert (posted.card.always, posted.card.grant_choices) == (False, ())
        surface = FakeSurface()
        always = channel.click(posted, APPROVER, ApprovalChoice.ALWAYS)
        assert await clicked(service, always, surface) is ClickVerdict.NO_GRANT_HERE
        assert surface.told[0].text == ClickVerdict.NO_GRANT_HERE.message
        pick = grant_pick(channel, posted, APPROVER, "1h")
        assert await clicked(service, pick) is ClickVerdict.NO_GRANT_HERE
        row = await store.approvals.get(posted.card.approval_id)
        assert row is not None and row.votes == () and row.status is ApprovalStatus.PENDING
        assert await clicked(service, channel.click(posted, APPROVER)) is ClickVerdict.COUNTED
        # one approval missing: still nothing to offer, still refused
        (_, edited) = channel.edits[-1]
        assert (edited.always, edited.grant_choices) == (False, ())
        last = channel.click(posted, SECOND, ApprovalChoice.ALWAYS)
        assert await clicked(service, last) is ClickVerdict.NO_GRANT_HERE
        assert await clicked(service, channel.click(posted, SECOND)) is ClickVerdict.ACCEPTED
    assert task.result().verdict is Decision.APPROVED
    assert await store.grants.list(now=0.0) == []
    assert await refusals(store) == [
        (Decision.CLICK_REFUSED_ALWAYS, APPROVER, "no_grant_here"),
        (Decision.CLICK_REFUSED_ALWAYS, APPROVER, "no_grant_here"),
        (Decision.CLICK_REFUSED_ALWAYS, SECOND, "no_grant_here"),
    ]


@pytest.mark.parametrize("how", ["always", "for 1 h"])
async def test_with_grants_satisfy_only_the_approval_that_completes_offers_a_grant(
    store: Store, channel: FakeChannel, how: str
) -> None:
    """With ``grants_satisfy`` the approval that completes the quorum makes its grant: the
    card offers Always and the choices only once one approval is missing; before that an
    Always is refused as anywhere it would make no grant."""
    service = service_for(quorum_settings(grants_satisfy=True), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        assert (posted.card.always, posted.card.grant_choices) == (False, ())
        early = channel.click(posted, APPROVER, ApprovalChoice.ALWAYS)
        assert await clicked(service, early) is ClickVerdict.NO_GRANT_HERE
        assert await clicked(service, channel.click(posted, APPROVER)) is ClickVerdict.COUNTED
        (_, edited) = channel.edits[-1]
        assert edited.always
        assert [o.key for o in edited.grant_choices] == ["1h", "conv", "exact"]
        if how == "always":
            last = channel.click(posted, SECOND, ApprovalChoice.ALWAYS)
        else:
            last = grant_pick(channel, posted, SECOND, "1h")
        assert await clicked(service, last) is ClickVerdict.ACCEPTED
    assert task.result().verdict is Decision.ALWAYS
    (grant,) = await store.grants.list(now=0.0)
    assert (grant.granted_by, grant.size) == (SECOND, "always" if how == "always" else how)
    assert await refusals(store) == [(Decision.CLICK_REFUSED_ALWAYS, APPROVER, "no_grant_here")]


async def test_a_quorum_nobody_could_reach_is_refused_at_once(store: Store) -> None:
    channel = FakeChannel(make_envelope().channel)
    settings = make_settings({"quorum": {"rules": [KUBECTL]}}, approvers=[APPROVER, REQUESTER])
    service = service_for(settings, store, channel)
    decision = await service.ask(kubectl())
    assert decision.runtime_reason is RuntimeReason.QUORUM_UNREACHABLE
    assert channel.posted == []


async def test_a_named_vote_shows_its_name(store: Store, channel: FakeChannel) -> None:
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, _):
        named = channel.click(posted, APPROVER)
        named = type(named)(
            channel=named.channel,
            approval_id=named.approval_id,
            verb=named.verb,
            actor=Actor(user_id=APPROVER, name="Alex"),
            card=named.card,
        )
        assert await clicked(service, named) is ClickVerdict.COUNTED
        (_, edited), *_ = channel.edits
        assert "1 of 2 approvals: Alex ✓" in edited.render_text()
        await clicked(service, channel.click(posted, SECOND, ApprovalChoice.DENY))


async def test_a_quorum_card_names_nobody_the_platform_does_not_confirm(
    store: Store, channel: FakeChannel
) -> None:
    """``name_approvers = "members"`` (the default) holds on a quorum card too: the fake
    channel cannot say who sees the conversation, so the progress line names nobody."""
    service = service_for(quorum_settings(), store, channel)
    async with asking(service, store, channel, kubectl()) as (posted, task):
        first = channel.click(posted, APPROVER)
        assert await clicked(service, first, FakeSurface()) is ClickVerdict.COUNTED
        (_, edited), *_ = channel.edits
        shown = edited.render_text()
        assert f"1 of 2 approvals: {APPROVER} ✓" in shown
        for hidden in (SECOND, THIRD, REQUESTER):
            assert hidden not in shown.split("approvals:", 1)[1]
        task.cancel()
