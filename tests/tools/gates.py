"""Small real approval gates for pipeline and loop tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bot.approval.gate import ApprovalDecision, ApprovalRequest, Assessment, PolicyResult
from bot.approval.reasons import PolicyReason, RuntimeReason
from bot.store.audit import Decision

APPROVED = ApprovalDecision(verdict=Decision.APPROVED, decided_by="alice")
DENIED = ApprovalDecision(verdict=Decision.DENIED, decided_by="alice")
AUTO_DENIED = ApprovalDecision.by_runtime(RuntimeReason.NO_BACKCHANNEL)
TIMED_OUT = ApprovalDecision.by_runtime(RuntimeReason.TIMEOUT, Decision.EXPIRED)


#: The rule a table entry stands for, as the real policy would name it.
_TABLE_REASON = {
    Assessment.ALLOW: PolicyReason.AUTO_APPROVE,
    Assessment.ASK: PolicyReason.ALWAYS_ASK,
    Assessment.DENY: PolicyReason.DENY_LIST,
}


class PolicyGate:
    """Assesses by a table (tool → assessment); calls whose ``requires_approval`` is set are
    ASK unless the table says otherwise; answers asks from a decision table (default
    approved). Records every request."""

    def __init__(
        self,
        policy: Mapping[str, Assessment] | None = None,
        decisions: Mapping[str, ApprovalDecision] | None = None,
    ) -> None:
        self.policy = dict(policy or {})
        self.decisions = dict(decisions or {})
        self.assessed: list[ApprovalRequest] = []
        self.asked: list[ApprovalRequest] = []

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        self.assessed.append(request)
        found = self.policy.get(request.tool)
        if found is None:
            found = Assessment.ASK if request.requires_approval else Assessment.ALLOW
        return PolicyResult(assessment=found, reason=_TABLE_REASON[found])

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.decisions.get(request.tool, APPROVED)


class AllowAllGate:
    """Allows everything without asking (the bench's auto-approval)."""

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.AUTO_APPROVE)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        raise AssertionError("AllowAllGate never asks")


class WaitingGate(PolicyGate):
    """Every ask waits until :attr:`answer` is set; :attr:`waiting` is set while it waits."""

    def __init__(self, decision: ApprovalDecision = APPROVED) -> None:
        super().__init__()
        self.decision = decision
        self.waiting = asyncio.Event()
        self.answer = asyncio.Event()

    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        self.assessed.append(request)
        return PolicyResult(assessment=Assessment.ASK, reason=PolicyReason.ALWAYS_ASK)

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        self.waiting.set()
        await self.answer.wait()
        return self.decision
