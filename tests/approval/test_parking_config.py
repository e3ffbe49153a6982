"""A parked turn that no longer fits the configuration (issue 39, "Bad input and failure"),
with Apps over one real PostgreSQL database and the in-process channel: its channel removed
or the requester's access taken away by a reload, and its tool or agent removed while the
daemon was stopped. The card expires with a reason naming the change and nothing of the
turn runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.agent.loop import AGENT_REMOVED_MESSAGE
from bot.approval.reasons import RuntimeReason
from bot.channel import CardState, ClickVerdict
from bot.store import InboxStatus
from bot.store.approvals import ApprovalStatus
from tests.approval.conftest import (
    KEY,
    PARK_SOON,
    WAIT_S,
    answers,
    assert_nothing_ran,
    parked_card,
    status_of,
    until_closed,
    until_inbox,
)
from tests.approval.test_parking_reload import OPS
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, QUICK_REPLICAS, Replicas, replica_settings

TEAM: dict[str, Any] = {"allowed_users": ["*"], "approvers": [APPROVER]}


def with_team(**changes: Any) -> dict[str, Any]:
    return {**PARK_SOON, "channels": {"slack": {"team": {**TEAM, **changes}}}}


async def test_a_reload_that_disables_the_channel_of_a_parked_turn_expires_it_and_ends_it(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id

    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=with_team(enabled=False)))
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.CHANNEL_REMOVED,
    )
    await until_inbox(a.app.store, InboxStatus.FAILED)
    entry = await a.app.store.inbox.get(KEY)
    assert entry is not None and entry.error == RuntimeReason.CHANNEL_REMOVED
    # the card says so where the adapter still runs; nothing ran, the model was not called
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    await assert_nothing_ran(replicas, a, card)


async def test_a_reload_that_takes_the_requesters_access_away_expires_the_parked_card(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id

    # an unrelated reload changes nothing for it
    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=with_team(max_message_chars=9000)))
    # the conversation is no longer one the bot answers
    changed = with_team(group_policy="allowlist", allowed_conversations=["C_OTHER"])
    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=changed))
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.ACCESS_REMOVED,
    )
    await until_inbox(a.app.store, InboxStatus.FAILED)
    await assert_nothing_ran(replicas, a, card)


async def test_a_tool_removed_while_the_daemon_was_stopped_expires_the_card_at_the_start(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.stop(a)

    # the file was edited meanwhile: the agent no longer has the tool
    agent = {"turn_timeout_s": 60.0, "parallel_tools": False, "excluded_tools": ["deploy"]}
    b = await replicas.start("b", extra={**PARK_SOON, "agent": agent})
    assert await status_of(b.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.TOOL_GONE,
    )
    # the turn resumes so that the model is told; the card shows the expiry
    await b.channel.wait_for("done: Not executed", within_s=WAIT_S)
    await until_closed(b.app.store, approval_id)
    assert [(mid, c.state) for mid, c in b.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    await assert_nothing_ran(replicas, b, card, answered=True)
    # the model is told why, not that the tool does not exist
    told = answers(b)
    assert len(told) == 1 and "the tool is no longer configured" in told[0], told


async def test_an_agent_removed_while_the_daemon_was_stopped_expires_the_card_at_the_start(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=OPS)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.stop(a)

    b = await replicas.start("b", extra=PARK_SOON)  # no ops any more
    assert await status_of(b.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.AGENT_GONE,
    )
    await b.channel.wait_for(AGENT_REMOVED_MESSAGE, within_s=WAIT_S)
    await until_closed(b.app.store, approval_id)
    await assert_nothing_ran(replicas, b, card)


async def test_a_parked_turn_that_still_fits_is_left_alone_at_a_start(replicas: Replicas) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.stop(a)
    b = await replicas.start("b", extra={**PARK_SOON, "replicas": dict(QUICK_REPLICAS)})
    assert await status_of(b.app.store, approval_id) == (ApprovalStatus.PENDING, None)
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)


async def test_an_approver_removed_while_stopped_is_refused_on_the_parked_card(
    replicas: Replicas,
) -> None:
    a = await replicas.start("a", extra=with_team(approvers=[APPROVER, "U_FAR"]))
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await replicas.stop(a)

    b = await replicas.start("b", extra=with_team(approvers=[APPROVER]))
    verdict = await clicked(b.app.approvals, b.channel.click(card, "U_FAR"))
    assert verdict is ClickVerdict.NOT_AUTHORISED
    assert await status_of(b.app.store, approval_id) == (ApprovalStatus.PENDING, None)
    assert replicas.deployed == []
    assert await clicked(b.app.approvals, b.channel.click(card, APPROVER)) is ClickVerdict.ACCEPTED
    await b.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    assert replicas.deployed == [("b", {"version": "2"})]
