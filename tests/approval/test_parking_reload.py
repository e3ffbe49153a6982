"""A parked turn whose agent or tool a reload removed (issue 39, "Bad input and failure"),
with Apps over one real PostgreSQL database and the in-process channel: its card expires
with a reason naming the change and is edited so, and nothing of the turn runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.agent.loop import AGENT_REMOVED_MESSAGE
from bot.approval.reasons import RuntimeReason
from bot.channel import CardState
from bot.store.approvals import ApprovalStatus
from tests.approval.conftest import (
    PARK_SOON,
    WAIT_S,
    assert_nothing_ran,
    parked_card,
    until_closed,
)
from tests.fakes.replica_apps import Replicas, replica_settings

#: The conversation C1 is answered by the agent ``ops``.
OPS: dict[str, Any] = {**PARK_SOON, "agents": {"ops": {"routes": [{"conversation": "C1"}]}}}


async def test_a_parked_turn_whose_agent_a_reload_removed_expires_and_runs_nothing(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=OPS)
    card = await parked_card(a)
    approval_id = card.card.approval_id

    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=PARK_SOON))  # no ops any more
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.AGENT_REMOVED,
    )
    await a.channel.wait_for(AGENT_REMOVED_MESSAGE, within_s=WAIT_S)
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    # nothing ran: not the tool, not another agent's model in its place
    await assert_nothing_ran(replicas, a, card)


async def test_a_parked_card_whose_tool_a_reload_removed_expires_and_runs_nothing(
    replicas: Replicas, pg_url: str, tmp_path: Path
) -> None:
    a = await replicas.start("a", extra=PARK_SOON)
    card = await parked_card(a)
    approval_id = card.card.approval_id

    # the tools given to the App stand for the configured ones: the reload has no deploy
    a.app._given_tools = []
    a.app.reload(replica_settings(pg_url, tmp_path / "a", extra=PARK_SOON))
    assert await until_closed(a.app.store, approval_id) == (
        ApprovalStatus.EXPIRED,
        RuntimeReason.TOOL_REMOVED,
    )
    assert [(mid, c.state) for mid, c in a.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    await a.channel.wait_for("done:", within_s=WAIT_S)  # the model is told, and answers
    await assert_nothing_ran(replicas, a, card, answered=True)
