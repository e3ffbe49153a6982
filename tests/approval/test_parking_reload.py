"""A parked turn whose agent or tool a reload removed (issue 39, "Bad input and failure"),
with Apps over one real PostgreSQL database and the in-process channel: its card expires
with a reason naming the change and is edited so, and nothing of the turn runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bot.agent.loop import AGENT_REMOVED_MESSAGE
from bot.approval.reasons import RuntimeReason
from bot.channel import CardState, ClickVerdict
from bot.store import Store
from bot.store.approvals import ApprovalStatus
from bot.store.parked import ParkState
from tests.fakes.channel import clicked
from tests.fakes.replica_apps import APPROVER, Replicas, message, replica_settings

WAIT_S = 60.0
PARK_SOON: dict[str, Any] = {"approval": {"timeout_s": 60.0, "wait_in_turn_s": 0.2}}
#: The conversation C1 is answered by the agent ``ops``.
OPS: dict[str, Any] = {**PARK_SOON, "agents": {"ops": {"routes": [{"conversation": "C1"}]}}}


async def until_parked(store: Store, approval_id: str) -> None:
    async with asyncio.timeout(WAIT_S):
        while True:
            row = await store.parked.row(approval_id)
            if row is not None and row.state is ParkState.PARKED:
                return
            await asyncio.sleep(0.05)


async def until_closed(store: Store, approval_id: str) -> tuple[ApprovalStatus, str | None]:
    """The card is decided and the parked turn is over (its row gone)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            record = await store.approvals.get(approval_id)
            assert record is not None
            gone = await store.parked.row(approval_id) is None
            if record.status is not ApprovalStatus.PENDING and gone:
                return record.status, record.reason
            await asyncio.sleep(0.05)


async def test_a_parked_turn_whose_agent_a_reload_removed_expires_and_runs_nothing(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=OPS)
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await until_parked(a.app.store, approval_id)

    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=PARK_SOON))  # no ops any more
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.AGENT_REMOVED,
    )
    await a.channel.wait_for(AGENT_REMOVED_MESSAGE, within_s=WAIT_S)
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    # nothing ran: not the tool, not another agent's model in its place
    assert replicas.deployed == []
    assert [t for t in a.channel.texts if t.startswith("done:")] == []
    assert replicas.log == [("a", "m1")]
    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is not (
        ClickVerdict.ACCEPTED
    )
    assert replicas.deployed == []


async def test_a_parked_card_whose_tool_a_reload_removed_expires_and_runs_nothing(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    await a.deliver(message("m1 deploy please", "1"))
    card = await asyncio.wait_for(a.channel.next_card(), WAIT_S)
    approval_id = card.card.approval_id
    await until_parked(a.app.store, approval_id)

    # the tools given to the App stand for the configured ones: the reload has no deploy
    a.app._given_tools = []
    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=PARK_SOON))
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.TOOL_REMOVED,
    )
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    await a.channel.wait_for("done:", within_s=WAIT_S)  # the model is told, and answers
    assert replicas.deployed == []
    assert await clicked(a.app.approvals, a.channel.click(card, APPROVER)) is not (
        ClickVerdict.ACCEPTED
    )
    assert replicas.deployed == []
