"""The auto-deny handler: the runtime refuses a call nobody can be asked about.

Used when the turn is background work, the conversation has no backchannel, the alias has
no approvers, no approver can be reached, or the daemon is shutting down. The model is told
the specific :class:`~bot.approval.reasons.RuntimeReason`; the operator's ``hint`` (which
setting would allow the call) goes to the log only.

A scheduled run has nobody to tell but its conversation: :class:`RunNotices` posts
:data:`~bot.approval.reasons.BACKGROUND_NOTICE` where the run's answer goes, once per run
(the first refused call), so that whoever reads the job's output learns why it did less
than asked.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.approval import audit, reasons
from bot.approval.card_desk import CHANNEL_FAILURES, ChannelLookup
from bot.approval.gate import ApprovalDecision, ApprovalRequest
from bot.approval.handler import AskedCall
from bot.approval.reasons import RuntimeReason
from bot.scrub import scrub_text
from bot.store.audit import AuditLog, Decision

log = structlog.get_logger(__name__)

#: Runs remembered as told; a run's refusals come within its turn, long before this many
#: other runs have been told.
TOLD_RUNS_KEPT = 256


class RunNotices:
    """Tells a background run's conversation, once per run, that a call needed an approval
    nobody could give. One per approval service; never raises for a platform failure."""

    def __init__(self, channel_for: ChannelLookup) -> None:
        self._channel_for = channel_for
        self._told: OrderedDict[str, None] = OrderedDict()

    async def tell(self, request: ApprovalRequest) -> None:
        """Post the notice for ``request``'s run unless that run was told already. Nothing
        is posted for a run whose answer is not posted either (delivery mode ``none``)."""
        turn = request.turn
        if turn.turn_id in self._told:
            return
        self._told[turn.turn_id] = None
        while len(self._told) > TOLD_RUNS_KEPT:
            self._told.popitem(last=False)
        envelope = turn.envelope
        if not envelope.announce:
            log.info("background_approval_notice_silent", tool=request.tool)
            return
        target = envelope.reply_target
        channel = self._channel_for(target.channel)
        if channel is None:
            log.warning("background_approval_notice_dropped", channel=str(target.channel))
            return
        try:
            await channel.send(target, reasons.BACKGROUND_NOTICE.format(tool=request.tool))
        except CHANNEL_FAILURES as exc:
            log.warning("background_approval_notice_failed", error=scrub_text(str(exc)))


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoDeny:
    """Refuses at once for ``why``: audited as ``auto_denied``, ``hint`` logged, and, when
    given ``notices`` (a background run), the run's conversation told once."""

    why: RuntimeReason
    hint: str
    audit_log: AuditLog
    clock: Callable[[], float]
    notices: RunNotices | None = None

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
        if self.notices is not None:
            await self.notices.tell(request)
        return ApprovalDecision.by_runtime(self.why)
