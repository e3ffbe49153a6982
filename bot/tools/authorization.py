"""Authorization: the ``approved`` marker, the gate's request, and turning approval decisions
into outcomes or approvers.

Only the runtime sets the approved state of a call, so any ``approved`` key the model wrote is
stripped before the gate sees the arguments. The gate's policy assessment and a person's (or
the runtime's) decision become NOT_EXECUTED outcomes when they say no; the operator's hint
(which setting would allow the call) goes to the log only. When they say yes, the call's
``tool_calls`` row names who did, with the names its audit row uses.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping

import structlog

from bot.approval import audit, reasons
from bot.approval.gate import ApprovalDecision, ApprovalRequest
from bot.approval.reasons import RuntimeReason
from bot.approval.summary import describe
from bot.store import Store
from bot.store.audit import Decision
from bot.tools.call import CallDecision, PreparedCall
from bot.tools.outcome import OutcomeReason, ToolOutcome, edited, not_executed
from bot.tools.spec import ToolContext, ToolSpec

log = structlog.get_logger(__name__)

APPROVED_MARKER = "approved"


def strip_marker(arguments: Mapping[str, object]) -> Mapping[str, object]:
    """``arguments`` without the ``approved`` marker (the same object when absent)."""
    if APPROVED_MARKER not in arguments:
        return arguments
    return {k: v for k, v in arguments.items() if k != APPROVED_MARKER}


def needs_approval(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> bool:
    """``spec.approval_check`` decides per call when set; otherwise ``requires_approval``."""
    if spec.approval_check is not None:
        return spec.approval_check(arguments, context)
    return spec.requires_approval


def approval_request(
    context: ToolContext, spec: ToolSpec, *, call_id: str, arguments: Mapping[str, object]
) -> ApprovalRequest:
    """What the gate assesses (and, for ASK, asks about): ``arguments`` as the call will run."""
    return ApprovalRequest(
        tool=spec.name,
        arguments=arguments,
        call_id=call_id,
        turn=context.turn,
        requires_approval=needs_approval(spec, arguments, context),
        about=spec.description if spec.origin else "",
        notes=spec.approval_notes(arguments, context) if spec.approval_notes else (),
    )


async def previewed(
    request: ApprovalRequest,
    spec: ToolSpec,
    arguments: Mapping[str, object],
    context: ToolContext,
) -> ApprovalRequest | str:
    """``request`` as a person will be asked about it: with what its tool shows of its effect
    (``spec.approval_preview``: a file's diff) and binds the approval to; or, when the tool
    says the call cannot run as asked (a path outside the workspace), that reason: nobody is
    asked. Called only once the policy said ASK (the pipeline, ``hatchway policy explain``)."""
    if spec.approval_preview is None:
        return request
    shown = await spec.approval_preview(arguments, context)
    if shown.refusal:
        return shown.refusal
    return dataclasses.replace(
        request,
        notes=(*request.notes, *shown.notes),
        diff=shown.diff,
        binding=shown.binding,
        covered=shown.covers,
    )


def policy_approver(request: ApprovalRequest) -> str | None:
    """Who let a call the policy allowed without asking run: the runtime for a side-effecting
    call (a grant, ``auto_approve`` or the ``full`` level; its audit row says which), nobody
    for a call that needed no approval (it has no audit row either)."""
    return reasons.RUNTIME if request.requires_approval else None


def policy_denial(*, call_id: str, tool: str, reason: str) -> ToolOutcome:
    """The policy (deny list, readonly level) or a hook refused the call outright."""
    log.info("tool_call_policy_denied", tool=tool, call_id=call_id, reason=reason)
    return not_executed(OutcomeReason.POLICY_DENIED, call_id=call_id, tool=tool)


def decision_outcome(decision: ApprovalDecision, *, call_id: str, tool: str) -> ToolOutcome | None:
    """``None`` when the decision lets the call run, else its NOT_EXECUTED outcome."""
    if decision.allowed:
        return None
    if decision.verdict is Decision.EDITED:
        return edited(call_id=call_id, tool=tool, replacement=decision.replacement_text or "")
    if decision.verdict is Decision.DENIED:
        return not_executed(OutcomeReason.DENIED_BY_PERSON, call_id=call_id, tool=tool)
    if decision.runtime_reason is RuntimeReason.TIMEOUT:
        return not_executed(OutcomeReason.APPROVAL_TIMED_OUT, call_id=call_id, tool=tool)
    # the runtime's "no": the model gets its specific reason, the operator's fix is logged
    log.info("tool_call_auto_denied", tool=tool, call_id=call_id, reason=decision.runtime_reason)
    return not_executed(
        OutcomeReason.AUTO_DENIED,
        call_id=call_id,
        tool=tool,
        detail=(decision.runtime_reason or RuntimeReason.NO_BACKCHANNEL).wording,
    )


async def binding_refusal(store: Store, context: ToolContext, call: PreparedCall) -> CallDecision:
    """An approved call whose binding changed before it ran (``file changed``): its audit
    row (``auto_denied``, decided by the runtime, after the person's ``approved`` row) and
    the decision its call row keeps. The outcome the model sees is
    :data:`~bot.tools.outcome.OutcomeReason.FILE_CHANGED`'s."""
    request = dataclasses.replace(
        approval_request(context, call.spec, call_id=call.call_id, arguments=call.arguments),
        binding=call.binding,
    )
    reason = RuntimeReason.FILE_CHANGED
    await store.audit.append(
        audit.entry_for_request(
            request,
            describe(call.arguments, notes=request.notes).lines,
            at=time.time(),
            decision=Decision.AUTO_DENIED,
            decided_by=reasons.RUNTIME,
            reason=reason.value,
        )
    )
    return CallDecision(
        decision=Decision.AUTO_DENIED.value,
        decided_by=reasons.RUNTIME,
        reason=reason.value,
        fingerprint=request.fingerprint,
    )
