"""How the console words a tool call's outcome and an approval decision: the chat's words,
from the values a row stores, never from its text.

A call (:func:`call_outcome`) ran ok, ran and failed, was denied by a person, denied with a
reply, expired, refused by the policy or the runtime, or was stopped; a call that ran under a
grant says which. Rows recorded before migration 0019 keep no ``failed`` and no reason: what
they cannot tell reads "not recorded", never a guess. An audit row's decision
(:func:`decision_words`) reads as the chat says it ("denied with a reply", "refused: not an
approver"), not as stored (``edited``, ``click_refused:approve``).

Each label comes with a CSS class (``outcome-ok``, ``outcome-failed``, ``outcome-denied``,
``outcome-expired``, ``outcome-stopped``, ``outcome-unknown``) so the colours match the words.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.audit import Decision
from bot.store.tool_calls import ToolCallRecord

#: An outcome status as stored (:class:`bot.tools.outcome.OutcomeStatus` values).
EXECUTED, NOT_EXECUTED, ENV_ERROR, INTERRUPTED = (
    "executed",
    "not_executed",
    "env_error",
    "interrupted",
)
NOT_RECORDED = "not recorded"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A call's outcome as the console shows it: its words and their CSS class, and who
    decided (an identity, to be shown with its name; empty when nobody was asked)."""

    label: str
    css: str
    decided_by: str = ""


#: Why a call did not run, for reasons no decision explains (OutcomeReason values).
_NOT_RUN = {
    "unknown_tool": "not run: no such tool",
    "excluded_tool": "not run: tool not available here",
    "bad_arguments": "not run: invalid arguments",
    "malformed_json": "not run: arguments not a JSON object",
    "no_tool_call": "not run: no tool named",
    "hook_cancelled": "not run: cancelled by a hook",
    "hook_rewrite_invalid": "not run: a hook made it invalid",
    "policy_denied": "denied by the policy",
    "duplicate": "not run: duplicate of an earlier call",
    "repeated_prompt": "not run: already refused in this turn",
    "batch_full": "not run: too many calls in the turn",
    "busy": "not run: tool runner busy",
    "file_changed": "not run: the file changed after the card showed its diff",
}

#: The runtime's reasons (bot.approval.reasons.RuntimeReason values) in the chat's words.
_RUNTIME_WORDS = {
    "timeout": "nobody answered in time",
    "restart": "the bot restarted",
    "shutdown": "the bot shut down",
    "cancelled": "the turn was stopped",
    "card not posted": "the card could not be posted",
    "no backchannel": "no way to ask here",
    "no approver configured": "no approver configured",
    "no approver reachable": "no approver reachable",
    "background turn": "a scheduled run cannot ask",
    "arguments changed": "the arguments changed",
    "file changed": "the file changed after the card showed its diff",
}


def runtime_words(reason: str | None) -> str:
    """A runtime reason as the chat words it (an unknown one as stored)."""
    if not reason:
        return "no reason recorded"
    return _RUNTIME_WORDS.get(reason, reason)


def _ran(record: ToolCallRecord) -> Outcome:
    decided = record.decided_by or ""
    if record.failed is None:
        # a row from before outcomes were kept: who let it run was recorded, not how it ended
        let_run = record.approved_by or ""
        return Outcome(
            label=f"ran (failed or not: {NOT_RECORDED})" + (", let run by" if let_run else ""),
            css="outcome-unknown",
            decided_by=let_run,
        )
    grant = f" under grant #{record.grant_id}" if record.grant_id is not None else ""
    if record.decision in (Decision.APPROVED, Decision.ALWAYS) and decided:
        how = " and granted" if record.decision == Decision.ALWAYS else ""
        grant = f", approved{how} by"
    elif record.decision == Decision.POLICY_ALLOWED and not grant:
        grant = f", allowed by {record.decision_reason or 'the policy'}"
        decided = ""
    else:
        decided = ""
    if record.failed:
        how = f": {record.failure}" if record.failure else ""
        return Outcome(
            label=f"ran and failed{how}{grant}", css="outcome-failed", decided_by=decided
        )
    return Outcome(label=f"ran ok{grant}", css="outcome-ok", decided_by=decided)


def call_outcome(record: ToolCallRecord) -> Outcome:
    """What happened to the call ``record`` describes, in the chat's words."""
    if record.status == INTERRUPTED:
        return Outcome(label="stopped", css="outcome-stopped")
    if record.status == EXECUTED:
        return _ran(record)
    if record.status == ENV_ERROR:
        return Outcome(label="could not run: environment error", css="outcome-failed")
    if record.reason is None:
        return Outcome(label=f"not run (why: {NOT_RECORDED})", css="outcome-unknown")
    decided = record.decided_by or ""
    match record.decision:
        case Decision.DENIED:
            return Outcome(label="denied by", css="outcome-denied", decided_by=decided)
        case Decision.EDITED:
            return Outcome(label="denied with a reply by", css="outcome-denied", decided_by=decided)
        case Decision.EXPIRED:
            words = runtime_words(record.decision_reason)
            if record.decision_reason == "cancelled":
                return Outcome(label="stopped while waiting for approval", css="outcome-stopped")
            return Outcome(label=f"expired: {words}", css="outcome-expired")
        case Decision.AUTO_DENIED:
            words = runtime_words(record.decision_reason)
            return Outcome(label=f"refused by the runtime: {words}", css="outcome-denied")
    words = _NOT_RUN.get(record.reason, f"not run: {record.reason}")
    return Outcome(label=words, css="outcome-denied")


#: Audit decisions in the chat's words (docs/approvals.md lists the stored spellings).
_DECISION_WORDS = {
    Decision.POLICY_ALLOWED: "allowed by the policy",
    Decision.POLICY_DENIED: "denied by the policy",
    Decision.APPROVED: "approved",
    Decision.ALWAYS: "approved and granted",
    Decision.DENIED: "denied",
    Decision.EDITED: "denied with a reply",
    Decision.AUTO_DENIED: "refused by the runtime",
    Decision.EXPIRED: "expired",
    Decision.CLICK_REFUSED_APPROVE: "refused: an approve click",
    Decision.CLICK_REFUSED_DENY: "refused: a deny click",
    Decision.CLICK_REFUSED_ALWAYS: "refused: an approve-and-grant click",
}

_DECISION_CSS = {
    Decision.POLICY_ALLOWED: "outcome-ok",
    Decision.APPROVED: "outcome-ok",
    Decision.ALWAYS: "outcome-ok",
    Decision.POLICY_DENIED: "outcome-denied",
    Decision.DENIED: "outcome-denied",
    Decision.EDITED: "outcome-denied",
    Decision.AUTO_DENIED: "outcome-denied",
    Decision.EXPIRED: "outcome-expired",
}

#: Why a click was refused (the reason stored with a ``click_refused:*`` row), in the chat's
#: words; anything else is shown as stored.
_REFUSAL_WORDS = {
    "not_authorised": "not an approver",
    "self_approval": "their own request",
    "needs_full_view": "approve from the full view",
}


def decision_words(decision: Decision, reason: str) -> tuple[str, str]:
    """An audit row's decision in the chat's words, with its CSS class. A refused click
    says why it was refused ("refused: not an approver"); the runtime's decisions say
    their reason."""
    if decision in (
        Decision.CLICK_REFUSED_APPROVE,
        Decision.CLICK_REFUSED_DENY,
        Decision.CLICK_REFUSED_ALWAYS,
    ):
        why = _REFUSAL_WORDS.get(reason, reason)
        return (f"refused: {why}" if why else _DECISION_WORDS[decision]), "outcome-refused"
    words = _DECISION_WORDS.get(decision, str(decision))
    if decision in (Decision.EXPIRED, Decision.AUTO_DENIED):
        words = f"{words}: {runtime_words(reason)}"
    return words, _DECISION_CSS.get(decision, "outcome-unknown")
