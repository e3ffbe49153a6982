"""A call's row records how it was decided and how it ended, as values (migration 0019): the
console's turns page reads them instead of guessing from text."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from bot.approval.gate import ApprovalDecision, ApprovalRequest, Assessment, PolicyResult
from bot.approval.reasons import PolicyReason
from bot.store import Store
from bot.store.audit import Decision
from bot.tools.spec import FailureKind, ToolContext, ToolFailure, ToolOutput, ToolResult
from tests.fakes.scripted_provider import call
from tests.tools.gates import APPROVED, DENIED, TIMED_OUT, PolicyGate
from tests.tools.harness import Harness, spec

EDITED = ApprovalDecision(verdict=Decision.EDITED, decided_by="bob", replacement_text="no")


class GrantGate(PolicyGate):
    """Allows every call under grant #12."""

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.GRANT, grant_id=12)


async def act(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    return "done"


async def broken(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
    raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("side_effects", "gate", "expected"),
    [
        (True, PolicyGate(decisions={"act": DENIED}), ("denied", "alice", "", "denied_by_person")),
        (True, PolicyGate(decisions={"act": EDITED}), ("edited", "bob", "", "edited")),
        (True, PolicyGate(decisions={"act": TIMED_OUT}), ("expired", "runtime", "timeout", None)),
        (True, PolicyGate(decisions={"act": APPROVED}), ("approved", "alice", "", "none")),
        (
            True,
            PolicyGate(policy={"act": Assessment.DENY}),
            ("policy_denied", "runtime", "policy: deny list", "policy_denied"),
        ),
        (True, GrantGate(), ("policy_allowed", "runtime", "policy: grant #12", "none")),
        (False, PolicyGate(), (None, None, None, "none")),
    ],
)
async def test_rows_record_the_decision(
    store: Store,
    side_effects: bool,
    gate: PolicyGate,
    expected: tuple[str | None, str | None, str | None, str | None],
) -> None:
    harness = Harness(store, [spec("act", act, requires_approval=side_effects)], gate=gate)
    await harness.run(call("act", {"x": 1}))
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    decision, decided_by, reason, outcome_reason = expected
    assert row.decision == decision and row.decided_by == decided_by
    assert (row.decision_reason or "") == (reason or "")
    if outcome_reason is not None:
        assert row.reason == outcome_reason
    assert row.failed is False
    assert (row.fingerprint is None) == (decision is None)
    assert row.grant_id == (12 if isinstance(gate, GrantGate) else None)


async def test_a_tool_that_raised_is_recorded_as_failed(store: Store) -> None:
    harness = Harness(store, [spec("broken", broken)])
    await harness.run(call("broken", {}))
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.status == "executed" and row.failed is True and row.reason == "failed"
    assert row.failure == "RuntimeError"


async def test_a_tool_that_said_it_failed_is_recorded_with_its_code(store: Store) -> None:
    async def exits(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        return ToolOutput(
            text="no such file", failure=ToolFailure(kind=FailureKind.EXIT_CODE, code=3)
        )

    harness = Harness(store, [spec("exits", exits)])
    await harness.run(call("exits", {}))
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert row.failed is True and row.failure == "exit 3" and row.reason == "failed"
