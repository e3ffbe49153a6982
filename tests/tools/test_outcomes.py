"""One test per row of the outcome table (pipeline.md §6), through the real pipeline."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from bot.approval.gate import ApprovalDecision, Assessment
from bot.approval.reasons import RuntimeReason
from bot.envelope import Capabilities
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.store.audit import Decision
from bot.tools.hooks import HookCall, HookDecision, ToolHooks
from bot.tools.outcome import NO_OUTPUT, OutcomeReason, OutcomeStatus
from bot.tools.registry import ToolScope
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolResult
from tests.fakes.scripted_provider import call
from tests.tools.gates import AUTO_DENIED, DENIED, TIMED_OUT, PolicyGate
from tests.tools.harness import Harness, Recorder, make_envelope, spec, text_schema


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (ToolCallRequest(id="c1", name="nope", arguments="{}"), OutcomeReason.UNKNOWN_TOOL),
        (ToolCallRequest(id="c1", name="hidden", arguments="{}"), OutcomeReason.EXCLUDED_TOOL),
        (ToolCallRequest(id="c1", name="echo", arguments='{"x": 1}'), OutcomeReason.BAD_ARGUMENTS),
        (
            ToolCallRequest(id="c1", name="echo", arguments="{not json"),
            OutcomeReason.MALFORMED_JSON,
        ),
        (ToolCallRequest(id="c1", name="echo", arguments="[1, 2]"), OutcomeReason.MALFORMED_JSON),
        (ToolCallRequest(id="c1", name="", arguments="{}"), OutcomeReason.NO_TOOL_CALL),
    ],
)
async def test_refused_calls_are_not_executed_with_a_fixed_sentence(
    store: Store, request_: ToolCallRequest, reason: OutcomeReason
) -> None:
    echo, hidden = Recorder(), Recorder()
    harness = Harness(
        store,
        [
            spec("echo", echo, parameters=text_schema("x", required=["x"])),
            spec("hidden", hidden),
        ],
        scope=ToolScope(excluded=frozenset({"hidden"})),
    )
    report = await harness.run(request_)
    (outcome,) = report.outcomes
    assert outcome.status is OutcomeStatus.NOT_EXECUTED
    assert outcome.synthetic
    assert outcome.reason is reason
    assert outcome.observation.startswith("Not executed:")
    assert echo.calls == [] and hidden.calls == []
    rows = await store.tool_calls.for_turn(harness.turn_id)
    assert [(r.status, r.synthetic) for r in rows] == [("not_executed", True)]


@pytest.mark.parametrize(
    ("decision", "reason", "must_contain"),
    [
        (DENIED, OutcomeReason.DENIED_BY_PERSON, "a person"),
        (AUTO_DENIED, OutcomeReason.AUTO_DENIED, "no way to ask an approver"),
        (TIMED_OUT, OutcomeReason.APPROVAL_TIMED_OUT, "in time"),
    ],
)
async def test_denials_say_who_said_no_and_that_the_tool_did_not_run(
    store: Store, decision: ApprovalDecision, reason: OutcomeReason, must_contain: str
) -> None:
    risky = Recorder()
    gate = PolicyGate(decisions={"risky": decision})
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    (outcome,) = (await harness.run(call("risky"))).outcomes
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert outcome.reason is reason
    assert must_contain in outcome.observation
    assert "did not run" in outcome.observation
    assert risky.calls == []


async def test_person_no_and_runtime_no_are_worded_differently(store: Store) -> None:
    texts = []
    for decision in (DENIED, AUTO_DENIED):
        gate = PolicyGate(decisions={"risky": decision})
        harness = Harness(store, [spec("risky", Recorder(), requires_approval=True)], gate=gate)
        texts.append((await harness.run(call("risky"))).outcomes[0].observation)
    assert texts[0] != texts[1]
    assert "person" in texts[0] and "person" not in texts[1]
    # the operator's hint stays in the log, never in the observation
    assert "set approvers" not in texts[1]


async def test_policy_deny_is_not_executed(store: Store) -> None:
    risky = Recorder()
    gate = PolicyGate(policy={"risky": Assessment.DENY})
    harness = Harness(store, [spec("risky", risky)], gate=gate)
    (outcome,) = (await harness.run(call("risky"))).outcomes
    assert outcome.reason is OutcomeReason.POLICY_DENIED
    assert "did not run" in outcome.observation
    assert gate.asked == [] and risky.calls == []


async def test_hook_cancel_is_not_executed(store: Store) -> None:
    async def veto(hook_call: HookCall) -> HookDecision:
        return HookDecision(cancel=True)

    echo = Recorder()
    harness = Harness(store, [spec("echo", echo)], hooks=ToolHooks(before=(veto,)))
    (outcome,) = (await harness.run(call("echo"))).outcomes
    assert outcome.reason is OutcomeReason.HOOK_CANCELLED
    assert "cancelled by a runtime hook" in outcome.observation
    assert echo.calls == []


async def test_duplicate_in_one_step_is_not_executed(store: Store) -> None:
    echo = Recorder()
    harness = Harness(store, [spec("echo", echo)])
    report = await harness.run(call("echo", {"a": 1}), call("echo", {"a": 1}))
    assert [o.reason for o in report.outcomes] == [OutcomeReason.NONE, OutcomeReason.DUPLICATE]
    assert len(echo.calls) == 1


async def test_batch_full_keeps_its_slot_and_is_retryable(store: Store) -> None:
    echo = Recorder()
    harness = Harness(store, [spec("echo", echo, dedup_exempt=True)])
    calls = [call("echo", {"n": i}) for i in range(66)]
    report = await harness.run(*calls)
    assert [o.call_id for o in report.outcomes] == [c.id for c in calls]
    assert all(o.ok for o in report.outcomes[:64])
    for outcome in report.outcomes[64:]:
        assert outcome.reason is OutcomeReason.BATCH_FULL and outcome.retryable
        assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert len(echo.calls) == 64


async def test_deny_with_edit_shows_the_sanitised_bounded_replacement(store: Store) -> None:
    text = "use the staging db\x1b[31m instead" + "!" * 5000
    gate = PolicyGate(
        decisions={
            "risky": ApprovalDecision(
                verdict=Decision.EDITED, decided_by="alice", replacement_text=text
            )
        }
    )
    risky = Recorder()
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    (outcome,) = (await harness.run(call("risky"))).outcomes
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert outcome.reason is OutcomeReason.EDITED
    assert "use the staging db" in outcome.observation
    assert "\x1b" not in outcome.observation
    assert len(outcome.observation) < 2200
    assert risky.calls == []


async def test_environment_error_is_env_error_with_its_text(store: Store) -> None:
    async def broken(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise ToolEnvironmentError("backend unreachable")

    harness = Harness(store, [spec("db", broken)])
    (outcome,) = (await harness.run(call("db"))).outcomes
    assert outcome.status is OutcomeStatus.ENV_ERROR
    assert not outcome.synthetic
    assert outcome.observation == "backend unreachable"


async def test_handler_exception_is_a_failed_execution_without_traceback(store: Store) -> None:
    async def bad(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise ValueError("no such row")

    harness = Harness(store, [spec("db", bad)])
    (outcome,) = (await harness.run(call("db"))).outcomes
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.failed and not outcome.ok
    assert not outcome.synthetic
    assert outcome.observation == "ValueError: no such row"
    assert "Traceback" not in outcome.observation


@pytest.mark.parametrize(("returned", "seen"), [("42 rows", "42 rows"), ("", NO_OUTPUT)])
async def test_returned_text_is_executed(store: Store, returned: str, seen: str) -> None:
    harness = Harness(store, [spec("db", Recorder(answer=lambda a: _const(returned)))])
    (outcome,) = (await harness.run(call("db"))).outcomes
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.ok and not outcome.synthetic
    assert outcome.observation == seen


async def _const(text: str) -> ToolResult:
    return text


async def test_turn_cancelled_is_interrupted(store: Store) -> None:
    started = asyncio.Event()

    async def slow(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        started.set()
        await asyncio.Event().wait()
        return "never"

    harness = Harness(store, [spec("slow", slow)])
    task = harness.run_task(call("slow"))
    await started.wait()
    harness.cancel.cancel()
    (outcome,) = (await task).outcomes
    assert outcome.status is OutcomeStatus.INTERRUPTED and outcome.synthetic
    assert outcome.observation == "Interrupted before result."
    assert not outcome.aborted_before_launch


async def test_cancelled_error_inside_the_handler_propagates(store: Store) -> None:
    async def rude(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        raise asyncio.CancelledError

    harness = Harness(store, [spec("rude", rude)])
    with pytest.raises(asyncio.CancelledError):
        await harness.run(call("rude"))


async def test_unapprovable_tool_offered_by_default_explains_itself(store: Store) -> None:
    """No terminal, no backchannel, hide_unapprovable_tools off: the tool stays offered and
    the runtime's auto-deny says an approver is needed."""
    envelope = make_envelope(capabilities=Capabilities())
    scope = ToolScope.for_turn(envelope=envelope)
    gate = PolicyGate(decisions={"risky": AUTO_DENIED})
    harness = Harness(
        store,
        [spec("risky", Recorder(), requires_approval=True)],
        gate=gate,
        envelope=envelope,
        scope=scope,
    )
    (outcome,) = (await harness.run(call("risky"))).outcomes
    assert outcome.reason is OutcomeReason.AUTO_DENIED
    assert "approver" in outcome.observation and "did not run" in outcome.observation


@pytest.mark.parametrize(
    "why", [r for r in RuntimeReason if r is not RuntimeReason.TIMEOUT], ids=str
)
async def test_the_model_is_told_the_runtimes_specific_reason(
    store: Store, why: RuntimeReason
) -> None:
    risky = Recorder()
    gate = PolicyGate(decisions={"risky": ApprovalDecision.by_runtime(why)})
    harness = Harness(store, [spec("risky", risky, requires_approval=True)], gate=gate)
    (outcome,) = (await harness.run(call("risky"))).outcomes
    assert outcome.reason is OutcomeReason.AUTO_DENIED
    assert why.wording in outcome.observation
    # no runtime reason is worded as if a person refused
    assert "denied by" not in why.wording.lower() and "refused it" not in why.wording
    assert risky.calls == []
