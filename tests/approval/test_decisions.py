"""One value per decision: what an ask returns, what its audit row stores and what the
approvals metric counts are the same :class:`~bot.store.audit.Decision`, whichever handler
decided."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from bot.approval.gate import ApprovalDecision
from bot.approval.reasons import RuntimeReason
from bot.channel import ApprovalChoice, ClickVerdict
from bot.metrics import MeteredGate, Metrics
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.conftest import (
    APPROVER,
    SLACK,
    make_envelope,
    make_request,
    make_settings,
    service_for,
)
from tests.fakes.channel import FakeChannel, FakeTerminal, clicked


def counted(metrics: Metrics) -> Counter[str]:
    """The approvals metric by its decision label."""
    return Counter(
        {
            sample.labels["decision"]: int(sample.value)
            for family in metrics.registry.collect()
            if family.name == "hatchway_approvals"
            for sample in family.samples
            if sample.name == "hatchway_approvals_total"
        }
    )


async def audited(store: Store) -> Counter[str]:
    return Counter(row.decision.value for row in await store.audit.since())


@pytest.mark.parametrize(
    ("answers", "timeout_s", "expected", "runtime_reason"),
    [
        pytest.param(["y"], 5.0, Decision.APPROVED, None, id="yes"),
        pytest.param(["a"], 5.0, Decision.ALWAYS, None, id="always"),
        pytest.param(["n"], 5.0, Decision.DENIED, None, id="no"),
        pytest.param([], 0.05, Decision.EXPIRED, RuntimeReason.TIMEOUT, id="no answer"),
    ],
)
async def test_the_terminal_returns_audits_and_counts_one_decision(
    store: Store,
    answers: list[str | None],
    timeout_s: float,
    expected: Decision,
    runtime_reason: RuntimeReason | None,
) -> None:
    metrics = Metrics()
    service = service_for(
        make_settings({"timeout_s": timeout_s}), store, FakeTerminal(SLACK, answers)
    )
    gate = MeteredGate(service, metrics)
    decision = await gate.ask(make_request(envelope=make_envelope(terminal=True)))
    assert (decision.verdict, decision.runtime_reason) == (expected, runtime_reason)
    assert await audited(store) == counted(metrics) == Counter({expected.value: 1})


async def test_cards_and_auto_deny_return_audit_and_count_one_decision_each(
    store: Store, channel: FakeChannel
) -> None:
    metrics = Metrics()
    service = service_for(make_settings({"timeout_s": 0.2}), store, channel)
    gate = MeteredGate(service, metrics)

    async def answered(choice: ApprovalChoice, reply: str | None = None) -> ApprovalDecision:
        async with asyncio.TaskGroup() as group:
            task = group.create_task(gate.ask(make_request()))
            card = await channel.next_card()
            click = channel.click(card, APPROVER, choice, replacement_text=reply)
            assert await clicked(service, click) is ClickVerdict.ACCEPTED
        return task.result()

    decisions = [
        await answered(ApprovalChoice.APPROVE),
        await answered(ApprovalChoice.DENY, "use ls instead"),
        await gate.ask(make_request()),  # nobody answers within timeout_s
        await gate.ask(make_request(envelope=make_envelope(backchannel=False))),
    ]
    assert [(d.verdict, d.runtime_reason) for d in decisions] == [
        (Decision.APPROVED, None),
        (Decision.EDITED, None),
        (Decision.EXPIRED, RuntimeReason.TIMEOUT),
        (Decision.AUTO_DENIED, RuntimeReason.NO_BACKCHANNEL),
    ]
    assert await audited(store) == counted(metrics) == Counter(d.verdict.value for d in decisions)


@pytest.mark.parametrize(
    "verdict", [Decision.POLICY_ALLOWED, Decision.POLICY_DENIED, Decision.CLICK_REFUSED_DENY]
)
def test_an_ask_never_ends_in_a_policy_or_refused_click_decision(verdict: Decision) -> None:
    with pytest.raises(ValueError, match="not a decision an ask ends in"):
        ApprovalDecision(verdict=verdict, decided_by="runtime")
