"""The reasons stored with approval decisions, and the runtime's words for its own.

A :class:`RuntimeReason` is stored (the ``reason`` of an expired approvals row and of a
runtime audit row) and compared; the pipeline shows its :attr:`~RuntimeReason.wording` to
the model. Each wording names the specific cause, states plainly that the tool did not run,
and never says that a person refused: no person did. Operator hints (which setting would
allow a call) never appear here; they go to the log only. The one exception is a scheduled
run (:attr:`RuntimeReason.BACKGROUND`): nobody is there to ask, so its wording says that an
admin can add a grant or ``auto_approve`` for the tool (never which setting or file), and
the job's conversation is told once per run (:data:`BACKGROUND_NOTICE`).

A person's decision is stored with the :class:`AnswerRoute` it came by; a refused click
with its :class:`~bot.channel.ClickVerdict`; a policy decision with ``policy: `` and the
words of the :class:`PolicyReason` that decided it (:func:`policy_text`: ``policy: grant #12``,
``policy: deny list``).
"""

from __future__ import annotations

import enum

RUNTIME = "runtime"


class AnswerRoute(enum.StrEnum):
    """How a person's answer reached the service: the ``reason`` of their decision's rows."""

    TERMINAL = "terminal"  # the console prompt
    CLICK = "click"  # a button, reaction, reply or full view on a card
    CLI = "cli"  # ``hatchway approvals approve|deny``
    WEB = "web"  # the web console's pending approvals page


class PolicyReason(enum.StrEnum):
    """Which rule of the policy's decision order (:mod:`bot.approval.policy`) decided a call.
    The values are the rule's words in logs and audit rows; a grant's also names the grant
    (:func:`policy_text`)."""

    DENY_LIST = "deny list"
    READONLY_LEVEL = "readonly level"
    FULL_LEVEL = "full level"
    ALWAYS_ASK = "always_ask"
    GRANT = "grant"
    AUTO_APPROVE = "auto_approve"
    READ_ONLY_TOOL = "read-only tool"
    SIDE_EFFECTS = "side-effecting tool"
    #: A rule of ``[approval.quorum]``: several distinct approvers must say yes.
    QUORUM = "quorum"


POLICY_PREFIX = "policy: "


def policy_text(reason: PolicyReason, grant_id: int | None = None) -> str:
    """The words for ``reason`` as logs show them: its value, and for a grant the grant's id
    (``grant #12``). Audit rows store them after :data:`POLICY_PREFIX`."""
    return f"{reason.value} #{grant_id}" if reason is PolicyReason.GRANT else reason.value


class RuntimeReason(enum.StrEnum):
    """Why the runtime decided an approval. The values are what rows store."""

    NO_BACKCHANNEL = "no backchannel"
    NO_APPROVER = "no approver configured"
    NOBODY_REACHABLE = "no approver reachable"
    BACKGROUND = "background turn"
    TIMEOUT = "timeout"
    RESTART = "restart"
    SHUTDOWN = "shutdown"
    CANCELLED = "cancelled"
    CARD_FAILED = "card not posted"
    ARGUMENTS_CHANGED = "arguments changed"
    FILE_CHANGED = "file changed"
    #: The call needs more distinct approvers than could ever answer here (the terminal,
    #: or fewer listed approvers besides the requester than the quorum, and no roles).
    QUORUM_UNREACHABLE = "quorum unreachable"
    #: A reload removed the tool, the agent, or the channel of a parked turn's card, or
    #: the requester's access to the channel: nothing runs.
    TOOL_REMOVED = "tool removed by reload"
    AGENT_REMOVED = "agent removed by reload"
    CHANNEL_REMOVED = "channel removed by reload"
    ACCESS_REMOVED = "access removed by reload"
    #: The same, changed in the configuration while the daemon was stopped (met at its start).
    TOOL_GONE = "tool removed while stopped"
    AGENT_GONE = "agent removed while stopped"
    CHANNEL_GONE = "channel removed while stopped"
    ACCESS_GONE = "access removed while stopped"

    @property
    def wording(self) -> str:
        """What the model is told (each says "The tool did NOT run")."""
        return _WORDING[self]

    @classmethod
    def parse(cls, text: str | None) -> RuntimeReason:
        """The reason a stored row names; an unknown or missing one reads as a restart (the
        one runtime decision rows written before reasons were stored could mean)."""
        try:
            return cls(text or "")
        except ValueError:
            return cls.RESTART


_DID_NOT_RUN = "The tool did NOT run."
_WORDING = {
    RuntimeReason.NO_BACKCHANNEL: (
        "This call needs approval, and this conversation has no way to ask an approver "
        f"(no approval buttons or reactions here), so the runtime denied it. {_DID_NOT_RUN}"
    ),
    RuntimeReason.NO_APPROVER: (
        "This call needs approval, and no approver is configured for this chat, so the "
        f"runtime denied it. {_DID_NOT_RUN}"
    ),
    RuntimeReason.NOBODY_REACHABLE: (
        "This call needs approval, and no approver can see this conversation or be messaged "
        "directly (the requester cannot approve their own request), so the runtime denied it "
        f"at once. {_DID_NOT_RUN}"
    ),
    RuntimeReason.BACKGROUND: (
        "This call needs approval, and scheduled runs cannot ask anyone, so the runtime "
        f"denied it. {_DID_NOT_RUN} An admin can add a grant or `auto_approve` for this tool."
    ),
    RuntimeReason.TIMEOUT: (
        f"No approver answered in time, so the runtime denied this call. {_DID_NOT_RUN}"
    ),
    RuntimeReason.RESTART: (
        "The approval request expired because the bot restarted. The tool did NOT run; "
        "please ask again."
    ),
    RuntimeReason.SHUTDOWN: (
        "The approval request expired because the bot is shutting down. The tool did NOT "
        "run; please ask again once it is back."
    ),
    RuntimeReason.CANCELLED: (
        f"The turn was cancelled (/stop) while waiting for approval. {_DID_NOT_RUN}"
    ),
    RuntimeReason.CARD_FAILED: (
        "The approval request could not be posted to the chat, so the runtime denied this "
        f"call. {_DID_NOT_RUN}"
    ),
    RuntimeReason.ARGUMENTS_CHANGED: (
        "The approval did not match this exact call (its arguments changed after the card "
        f"was shown), so the runtime denied it. {_DID_NOT_RUN}"
    ),
    RuntimeReason.FILE_CHANGED: (
        "The file changed after the approver was shown the change (what they approved was a "
        "diff against its earlier content), so the runtime did not run the approved call. "
        f"{_DID_NOT_RUN} Read the file again and ask again."
    ),
    RuntimeReason.QUORUM_UNREACHABLE: (
        "This call needs the approval of several different approvers, and not that many "
        "can answer here (the requester never counts), so the runtime denied it at once. "
        f"{_DID_NOT_RUN}"
    ),
    RuntimeReason.TOOL_REMOVED: (
        "The configuration was reloaded while this call waited for approval, and the tool "
        f"is no longer configured, so the request expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.AGENT_REMOVED: (
        "The configuration was reloaded while this call waited for approval, and the agent "
        f"that asked is no longer configured, so the request expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.CHANNEL_REMOVED: (
        "The configuration was reloaded while this call waited for approval, and the chat "
        f"channel it was asked in is no longer configured, so the request expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.ACCESS_REMOVED: (
        "The configuration was reloaded while this call waited for approval, and the person "
        f"who asked may no longer use the bot here, so the request expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.TOOL_GONE: (
        "The configuration changed while the bot was stopped and this call waited for "
        f"approval: the tool is no longer configured, so the request expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.AGENT_GONE: (
        "The configuration changed while the bot was stopped and this call waited for "
        "approval: the agent that asked is no longer configured, so the request expired. "
        f"{_DID_NOT_RUN}"
    ),
    RuntimeReason.CHANNEL_GONE: (
        "The configuration changed while the bot was stopped and this call waited for "
        "approval: the chat channel it was asked in is no longer configured, so the request "
        f"expired. {_DID_NOT_RUN}"
    ),
    RuntimeReason.ACCESS_GONE: (
        "The configuration changed while the bot was stopped and this call waited for "
        "approval: the person who asked may no longer use the bot here, so the request "
        f"expired. {_DID_NOT_RUN}"
    ),
}

#: Sent to a request's conversation when it expires at restart or shutdown with no turn of
#: this process left to say so.
EXPIRED_NOTICE = {
    RuntimeReason.RESTART: (
        "⌛ The approval request for {tool} expired because the bot restarted; please ask again."
    ),
    RuntimeReason.SHUTDOWN: (
        "⌛ The approval request for {tool} expired because the bot is shutting down; please "
        "ask again once it is back."
    ),
}

#: Posted once per scheduled run to where its answer goes, the first time a tool it called
#: needed an approval nobody could give.
BACKGROUND_NOTICE = (
    "🔐 This scheduled run needed approval for {tool}, and scheduled runs cannot ask anyone, "
    "so it did not run. An admin can add a grant or `auto_approve` for this tool."
)
