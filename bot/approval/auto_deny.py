"""The auto-deny handler: the runtime refuses a call nobody can be asked about.

Used when the turn is background work, the conversation has no backchannel, the alias has
no approvers, no approver can be reached, or the daemon is shutting down. The model is told
the specific :class:`~bot.approval.reasons.RuntimeReason`; the operator's ``hint`` (which
setting would allow the call) goes to the log only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.approval import audit, reasons
from bot.approval.gate import ApprovalDecision
from bot.approval.handler import AskedCall
from bot.approval.reasons import RuntimeReason
from bot.store.audit import AuditLog, Decision

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoDeny:
    """Refuses at once for ``why``: audited as ``auto_denied``, ``hint`` logged."""

    why: RuntimeReason
    hint: str
    audit_log: AuditLog
    clock: Callable[[], float]

    async def decide(self, asked: AskedCall) -> ApprovalDecision:
        request = asked.request
        await self.audit_log.append(
            audit.entry_for_request(
                request,
                asked.view.lines,
                at=self.clock(),
                decision=Decision.AUTO_DENIED,
                decided_by=reasons.RUNTIME,
                reason=self.why,
            )
        )
        log.warning(
            "approval_auto_denied",
            tool=request.tool,
            reason=self.why,
            hint=self.hint,
            channel=request.turn.channel,
        )
        return ApprovalDecision.by_runtime(self.why)
