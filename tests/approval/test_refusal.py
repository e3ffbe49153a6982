"""Asking for the reply form (or the full view) of an approval: the verdict a click would be
refused with, without deciding, expiring, auditing or editing anything."""

from __future__ import annotations

import pytest

from bot.approval import audit
from bot.approval.service import ApprovalService
from bot.cards import Actor, CardAction, CardReplyKind, CardVerb
from bot.channel import ClickVerdict
from bot.envelope import ChannelRef
from bot.store import Store
from bot.store.approvals import ApprovalStatus, Resolution
from tests.approval.conftest import APPROVER, DISCORD, REQUESTER, make_record, make_settings
from tests.fakes.channel import FakeSurface

NOW = 1_000.0
OTHER_ALIAS = ChannelRef(kind="discord", alias="other")


async def decided(store: Store, status: ApprovalStatus, by: str) -> None:
    """Store the pending row, then close it as its decider would."""
    record = make_record(NOW, channel=DISCORD)
    await store.approvals.create(record)
    entry = audit.entry_for_record(
        record, at=NOW, decision=status.value, decided_by=by, reason="test"
    )
    resolution = Resolution(status=status, decided_by=by, reason="test", at=NOW)
    assert await store.approvals.resolve(record.id, resolution, audit=entry)


def service(store: Store, *, now: float = NOW) -> ApprovalService:
    return ApprovalService(
        make_settings(kind="discord", approver_roles=["ops"]), store, {}.get, lambda: now
    )


async def refusal(
    answers: ApprovalService,
    *,
    channel: ChannelRef,
    approval_id: str,
    user_id: str,
    user_roles: tuple[str, ...],
) -> ClickVerdict | None:
    """What ``user_id`` asking for the reply form is refused with; None when it opens."""
    surface = FakeSurface()
    action = CardAction(
        channel=channel,
        approval_id=approval_id,
        verb=CardVerb.REPLY,
        actor=Actor(user_id=user_id, roles=user_roles),
    )
    reply = await answers.card_action(action, surface)
    if reply.kind is CardReplyKind.OPEN_REPLY_FORM:
        assert surface.reply_forms == [approval_id]
        return None
    assert surface.told == [reply]
    return reply.verdict


@pytest.mark.parametrize(
    ("user", "roles", "channel", "approval_id", "expected"),
    [
        (APPROVER, (), DISCORD, "apr-1", None),
        ("U_OPS", ("ops",), DISCORD, "apr-1", None),
        ("U_MALLORY", (), DISCORD, "apr-1", ClickVerdict.NOT_AUTHORISED),
        (REQUESTER, ("ops",), DISCORD, "apr-1", ClickVerdict.SELF_APPROVAL),
        (APPROVER, (), DISCORD, "apr-missing", ClickVerdict.UNKNOWN),
        (APPROVER, (), OTHER_ALIAS, "apr-1", ClickVerdict.UNKNOWN),
    ],
    ids=["approver", "role", "stranger", "self", "unknown_id", "other_alias"],
)
async def test_who_may_decide_a_pending_request(
    store: Store,
    user: str,
    roles: tuple[str, ...],
    channel: ChannelRef,
    approval_id: str,
    expected: ClickVerdict | None,
) -> None:
    await store.approvals.create(make_record(NOW, channel=DISCORD))
    verdict = await refusal(
        service(store), channel=channel, approval_id=approval_id, user_id=user, user_roles=roles
    )
    assert verdict is expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (ApprovalStatus.APPROVED, ClickVerdict.ALREADY_DECIDED),
        (ApprovalStatus.EDITED, ClickVerdict.ALREADY_DECIDED),
        (ApprovalStatus.EXPIRED, ClickVerdict.UNKNOWN),
    ],
)
async def test_a_closed_request_refuses_even_an_approver(
    store: Store, status: ApprovalStatus, expected: ClickVerdict
) -> None:
    await decided(store, status, "U_SOMEONE")
    verdict = await refusal(
        service(store), channel=DISCORD, approval_id="apr-1", user_id=APPROVER, user_roles=()
    )
    assert verdict is expected


async def test_a_stranger_is_refused_before_the_request_state_is_considered(
    store: Store,
) -> None:
    """Same order as a click: a stranger on a decided request is not authorised."""
    await decided(store, ApprovalStatus.DENIED, APPROVER)
    verdict = await refusal(
        service(store), channel=DISCORD, approval_id="apr-1", user_id="U_MALLORY", user_roles=()
    )
    assert verdict is ClickVerdict.NOT_AUTHORISED


async def test_asking_decides_expires_and_audits_nothing(store: Store) -> None:
    """Past the deadline the answer is what a click would get, but the row stays pending:
    expiring it is the asking side's (or a real click's) decision."""
    await store.approvals.create(make_record(NOW, channel=DISCORD))
    late = service(store, now=NOW + 5)
    answers = [
        await refusal(late, channel=DISCORD, approval_id="apr-1", user_id=user, user_roles=())
        for user in (APPROVER, "U_MALLORY", REQUESTER)
    ]
    assert answers == [
        ClickVerdict.UNKNOWN,
        ClickVerdict.NOT_AUTHORISED,
        ClickVerdict.NOT_AUTHORISED,
    ]
    row = await store.approvals.get("apr-1")
    assert row is not None and (row.status, row.decided_by) == (ApprovalStatus.PENDING, None)
    assert await store.audit.since() == []
