"""Reminders, escalation and the approvers a card names (bot.approval.reminders,
bot.approval.reach.named_approvers), in the core: the real service and store, a fake channel,
and the service's clock moved by the test (no test waits for the delays)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.service import ApprovalService
from bot.cards import APPROVERS_PREFIX, ESCALATED_PREFIX
from bot.channel import ClickVerdict
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.conftest import (
    APPROVER,
    DISCORD,
    REQUESTER,
    ManualClock,
    asking,
    make_envelope,
    make_request,
    make_settings,
)
from tests.fakes.channel import FakeChannel, MemberChannel, clicked

LEAD = "U_LEAD"
FAR = "U_FAR"


def _service(
    channel: FakeChannel, store: Store, approval: dict[str, Any], **team: Any
) -> tuple[ApprovalService, ManualClock]:
    settings = make_settings({"timeout_s": 3600, **approval}, kind=channel.ref.kind, **team)
    clock = ManualClock()
    service = ApprovalService(
        settings, store, {channel.ref: channel}.get, clock, poll_interval_s=0.02
    )
    return service, clock


async def _audited(store: Store, decision: Decision) -> list[str]:
    return [e.reason for e in await store.audit.since() if e.decision is decision]


def _card_now(channel: FakeChannel, message_id: str) -> str:
    """The text of card ``message_id`` as its last edit (or its post) shows it."""
    edits = [card for mid, card in channel.edits if mid == message_id]
    posted = next(p.card for p in channel.posted if p.message_id == message_id)
    return (edits[-1] if edits else posted).render_text()


async def test_a_tool_entry_schedules_reminders_the_table_does_not(store: Store) -> None:
    channel = FakeChannel(DISCORD)
    service, clock = _service(
        channel, store, {"tools": {"shell": {"remind_after_s": 60, "remind_max": 1}}}
    )
    other = make_request(tool="http_fetch", envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, other) as (posted, _):
        clock.now += 120
        assert await service.sweep_reminders() == 0  # no schedule for http_fetch
        await clicked(service, channel.click(posted, APPROVER))
    shell = make_request(envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, shell) as (posted, _):
        clock.now += 59
        assert await service.sweep_reminders() == 0
        clock.now += 1
        assert await service.sweep_reminders() == 1
        clock.now += 600
        assert await service.sweep_reminders() == 0  # remind_max = 1
        await clicked(service, channel.click(posted, APPROVER))
    assert [t for t in channel.texts if "Reminder" in t] == [
        next(t for t in channel.texts if t.startswith("⏰ Reminder 1/1: shell"))
    ]
    assert await _audited(store, Decision.REMINDED) == ["reminder 1 of 1"]


async def test_escalation_to_a_role_lets_its_holders_decide(store: Store) -> None:
    channel = FakeChannel(DISCORD)
    service, clock = _service(
        channel, store, {"escalate_after_s": 900, "escalate_to_roles": ["sre"]}
    )
    request = make_request(envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, request) as (posted, task):
        holder = channel.click(posted, "U_SRE", roles=("sre",))
        assert await clicked(service, holder) is ClickVerdict.NOT_AUTHORISED
        clock.now += 900
        assert await service.sweep_reminders() == 1
        assert await service.sweep_reminders() == 0
        assert f"{ESCALATED_PREFIX}role sre" in _card_now(channel, posted.message_id)
        target = await channel.wait_for("⏫ Escalated to role sre: shell still waits")
        assert (target.conversation_id, target.thread_id) == ("C1", "T1")
        # a role is not a person: nobody gets a DM copy for it
        assert [p.target.conversation_id for p in channel.posted] == ["C1"]
        assert await clicked(service, holder) is ClickVerdict.ACCEPTED
    assert task.result().decided_by == "U_SRE"
    assert await _audited(store, Decision.ESCALATED) == ["escalated to role sre"]
    row = await store.approvals.get(posted.card.approval_id)
    assert row is not None and row.escalated_roles == ("sre",) and row.escalated_to == ()


async def test_escalated_approvers_see_the_card_where_they_can(store: Store) -> None:
    # LEAD is in the conversation: told there; FAR is not: a copy of the card in their DM
    channel = MemberChannel(DISCORD, {"C1": {REQUESTER, APPROVER, LEAD}})
    service, clock = _service(
        channel,
        store,
        {"escalate_after_s": 600, "escalate_to": [LEAD, FAR], "escalate_to_roles": ["sre"]},
    )
    request = make_request(envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, request) as (posted, task):
        clock.now += 600
        assert await service.sweep_reminders() == 1
        copy = await channel.card_to(FAR)
        assert "Asked in:" in copy.card.render_text()
        assert f"{ESCALATED_PREFIX}{LEAD}, {FAR}, role sre" in copy.card.render_text()
        await channel.wait_for(f"⏫ Escalated to {LEAD}, role sre: shell")
        assert not any(FAR in t and "⏫" in t for t in channel.texts)
        # every copy says it was escalated and to whom
        assert f"{ESCALATED_PREFIX}{LEAD}" in _card_now(channel, posted.message_id)
        assert await clicked(service, channel.click(copy, FAR)) is ClickVerdict.ACCEPTED
    assert task.result().decided_by == FAR
    assert await _audited(store, Decision.ESCALATED) == [f"escalated to {LEAD}, {FAR}, role sre"]


async def test_a_reminder_in_an_approvers_dm_says_the_expiry_in_their_zone(store: Store) -> None:
    channel = FakeChannel(DISCORD)
    service, clock = _service(
        channel,
        store,
        {
            "remind_after_s": 600,
            "dm_approvers": True,
            "approver_zones": {APPROVER: "Asia/Tokyo", "U_OTHER": "America/New_York"},
        },
        approvers=[APPROVER, "U_OTHER", "U_UTC"],
    )
    request = make_request(envelope=make_envelope(channel=DISCORD))
    clock.now = 1_800_000_000.0  # 2027-01-15 08:00 UTC; expires at 09:00 UTC
    async with asking(service, store, channel, request) as (posted, _):
        clock.now += 600
        assert await service.sweep_reminders() == 1
        await channel.wait_for("Reminder 1/3")
        by_place = {target.conversation_id: text for target, text in channel.sent}
        await clicked(service, channel.click(posted, APPROVER))
    at = "2027-01-15 09:00 UTC"
    assert by_place[APPROVER].endswith(f"{at} (2027-01-15 18:00 Asia/Tokyo).")
    assert by_place["U_OTHER"].endswith(f"{at} (2027-01-15 04:00 America/New_York).")
    assert by_place["U_UTC"].endswith(f"expires at {at}.")  # no zone: UTC alone
    # the conversation's reminder is read by everyone: every zone configured
    assert "Asia/Tokyo" in by_place["C1"] and "America/New_York" in by_place["C1"]


@pytest.mark.parametrize(
    ("name_approvers", "named"),
    [
        # the default: those the platform says can see the conversation, and the roles
        ("members", "Ann (U_ADMIN), role ops"),
        ("all", "Ann (U_ADMIN), U_ABSENT, U_UNKNOWN, role ops"),
        ("none", ""),
    ],
)
async def test_a_group_card_names_who_can_approve_as_the_policy_allows(
    store: Store, name_approvers: str, named: str
) -> None:
    channel = MemberChannel(DISCORD, {"C1": {REQUESTER, APPROVER}})
    await store.display_names.remember(f"discord:{APPROVER}", "Ann", 1.0)
    service, _ = _service(
        channel,
        store,
        {"name_approvers": name_approvers},
        approvers=[APPROVER, "U_ABSENT", "U_UNKNOWN"],
        approver_roles=["ops"],
    )
    request = make_request(envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, request) as (posted, task):
        text = posted.card.render_text()
        await clicked(service, channel.click(posted, APPROVER))
    if named:
        assert f"{APPROVERS_PREFIX}{named}" in text.split("\n")
    else:
        assert APPROVERS_PREFIX not in text
    assert task.result().allowed
    # the decided card names nobody any more: it says who decided
    assert APPROVERS_PREFIX not in _card_now(channel, posted.message_id)


@pytest.mark.parametrize(
    ("name_approvers", "notice"),
    [
        ("members", "🔐 shell waits for an approver: the request was sent"),
        ("all", f"🔐 shell waits for an approver ({APPROVERS_PREFIX.lower()}{APPROVER}): the"),
    ],
)
async def test_the_requesters_dm_names_approvers_only_when_told_to(
    store: Store, name_approvers: str, notice: str
) -> None:
    channel = FakeChannel(DISCORD)
    service, _ = _service(channel, store, {"dm_approvers": True, "name_approvers": name_approvers})
    dm = make_envelope(channel=DISCORD, conversation=REQUESTER, is_group=False)
    async with asking(service, store, channel, make_request(envelope=dm)) as (posted, _):
        await channel.wait_for("waits for an approver")
        await clicked(service, channel.click(posted, APPROVER))
    [told] = [t for t in channel.texts if "waits for an approver" in t]
    assert told.startswith(notice)
    # the approver's own copy names the same people, never more
    assert (APPROVERS_PREFIX in posted.card.render_text()) is (name_approvers == "all")


async def test_a_reload_that_takes_an_escalation_or_an_approver_away_refuses_their_click(
    store: Store,
) -> None:
    channel = FakeChannel(DISCORD)
    approval = {"escalate_after_s": 900, "escalate_to": [LEAD], "escalate_to_roles": ["sre"]}
    service, clock = _service(channel, store, approval, approvers=[APPROVER, FAR])
    request = make_request(envelope=make_envelope(channel=DISCORD))
    async with asking(service, store, channel, request) as (posted, task):
        clock.now += 900
        assert await service.sweep_reminders() == 1
        # the file is edited and reloaded while the card waits: LEAD, the role sre and the
        # approver FAR are gone from it; the decision follows the configuration in force
        service.update_settings(
            make_settings(
                {"timeout_s": 3600, "escalate_after_s": 900, "escalate_to": ["U_OTHER"]},
                kind="discord",
                approvers=[APPROVER],
            )
        )
        assert await clicked(service, channel.click(posted, LEAD)) is ClickVerdict.NOT_AUTHORISED
        holder = channel.click(posted, "U_SRE", roles=("sre",))
        assert await clicked(service, holder) is ClickVerdict.NOT_AUTHORISED
        assert await clicked(service, channel.click(posted, FAR)) is ClickVerdict.NOT_AUTHORISED
        assert not task.done()
        assert await clicked(service, channel.click(posted, APPROVER)) is ClickVerdict.ACCEPTED
    assert task.result().decided_by == APPROVER
