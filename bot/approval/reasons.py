"""The runtime's words for decisions no person made.

These reasons travel in :class:`~bot.approval.gate.ApprovalDecision.reason` to the pipeline,
which shows them to the model; each states plainly that the tool did not run, so the model
cannot claim otherwise. Operator hints (which setting would allow a call) never appear here;
they go to the log only.
"""

from __future__ import annotations

RUNTIME = "runtime"

NO_APPROVER = (
    "This call needs approval, and no approver can be asked here, so the runtime denied it. "
    "The tool did NOT run."
)
BACKGROUND = (
    "This call needs approval, and background turns cannot ask anyone, so the runtime denied "
    "it. The tool did NOT run."
)
TIMED_OUT = "No approver answered in time, so the runtime denied this call. The tool did NOT run."
RESTART = (
    "The approval request expired because the bot restarted. The tool did NOT run; "
    "please ask again."
)
CANCELLED = "The turn was cancelled while waiting for approval. The tool did NOT run."
CARD_FAILED = (
    "The approval request could not be posted, so the runtime denied this call. "
    "The tool did NOT run."
)
POLICY_DENY = "The approval policy forbids this call ({why}). The tool did NOT run."

#: Sent to the conversation when a pending request expires at restart or shutdown.
RESTART_NOTICE = (
    "⌛ The approval request for {tool} expired because the bot restarted; please ask again."
)

# Short audit reasons (the "why" column of runtime rows).
AUDIT_NO_BACKCHANNEL = "no backchannel"
AUDIT_NO_APPROVER = "no approver configured"
AUDIT_BACKGROUND = "background turn"
AUDIT_TIMEOUT = "timeout"
AUDIT_RESTART = "restart"
AUDIT_CANCELLED = "cancelled"
AUDIT_CARD_FAILED = "card not posted"
