"""Tool outcomes: what happened to one call, and the fixed sentences the model sees.

================================  ==============  ===========
what happened                     status          synthetic
================================  ==============  ===========
unknown/excluded tool, bad args   NOT_EXECUTED    yes
denied, hook, duplicate, full     NOT_EXECUTED    yes
deny-with-edit                    NOT_EXECUTED    yes (approver's text)
``ToolEnvironmentError``          ENV_ERROR       no
any other handler exception       EXECUTED        no (``failure``: RAISED)
handler returned a failure        EXECUTED        no (``failure``: exit code, HTTP status)
handler returned                  EXECUTED        no
turn cancelled                    INTERRUPTED     yes
================================  ==============  ===========

A person's "no" and the runtime's "no approver reachable" are worded differently, and every
denial says the tool did not run so that the model does not pretend it did. Operator hints
(which setting would allow a call) go to the log, never into an observation.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from bot.channel import MAX_REPLY_CHARS
from bot.providers.base import ImagePart
from bot.tools.spec import FailureKind, ToolFailure


class OutcomeStatus(enum.StrEnum):
    NOT_EXECUTED = "not_executed"
    ENV_ERROR = "env_error"
    EXECUTED = "executed"
    INTERRUPTED = "interrupted"


class OutcomeReason(enum.StrEnum):
    """Why a call did not produce a normal result (``NONE`` when it did)."""

    NONE = "none"
    UNKNOWN_TOOL = "unknown_tool"
    EXCLUDED_TOOL = "excluded_tool"
    BAD_ARGUMENTS = "bad_arguments"
    MALFORMED_JSON = "malformed_json"
    NO_TOOL_CALL = "no_tool_call"
    HOOK_CANCELLED = "hook_cancelled"
    HOOK_REWRITE_INVALID = "hook_rewrite_invalid"
    POLICY_DENIED = "policy_denied"
    DENIED_BY_PERSON = "denied_by_person"
    APPROVAL_TIMED_OUT = "approval_timed_out"
    AUTO_DENIED = "auto_denied"
    EDITED = "edited"
    DUPLICATE = "duplicate"
    REPEATED_PROMPT = "repeated_prompt"
    BATCH_FULL = "batch_full"
    BUSY = "busy"
    #: A person approved the call, but what the approval was bound to (the file a diff was
    #: shown against) changed before it ran.
    FILE_CHANGED = "file_changed"
    FAILED = "failed"
    ENVIRONMENT = "environment"
    CANCELLED = "cancelled"
    #: The call waits on an approval card with its turn parked (:mod:`bot.tools.parking`).
    WAITING_FOR_APPROVAL = "waiting_for_approval"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """The result of one call. ``observation`` is what the model sees (before bounding).

    ``aborted_before_launch`` is true only for an INTERRUPTED call whose handler never
    started; a cancel after launch never claims nothing happened. ``images`` go to the model
    with the observation in this turn and are never stored (the ``tool_calls`` row and
    history keep the observation, which names them). ``failure`` is set for a call that ran
    and failed (see :class:`~bot.tools.spec.ToolFailure`); it is a field, never parsed from
    the observation.
    """

    call_id: str
    tool: str
    status: OutcomeStatus
    observation: str
    synthetic: bool
    reason: OutcomeReason = OutcomeReason.NONE
    failure: ToolFailure | None = None
    retryable: bool = False
    aborted_before_launch: bool = False
    duration_s: float = 0.0
    paths: tuple[str, ...] = ()
    images: tuple[ImagePart, ...] = ()

    @property
    def failed(self) -> bool:
        """The handler ran and failed: it raised, or its tool said so."""
        return self.failure is not None

    @property
    def returned(self) -> bool:
        """The handler returned a result, perhaps one its tool marked as failed (a command's
        exit code 1): such a call gets a receipt and counts towards loop detection."""
        return self.status is OutcomeStatus.EXECUTED and (
            self.failure is None or self.failure.kind is not FailureKind.RAISED
        )

    @property
    def ok(self) -> bool:
        """The handler ran and returned normally."""
        return self.status is OutcomeStatus.EXECUTED and not self.failed

    def with_observation(self, observation: str) -> ToolOutcome:
        return replace(self, observation=observation)


_SENTENCES: dict[OutcomeReason, str] = {
    OutcomeReason.WAITING_FOR_APPROVAL: (
        "Not executed yet: {detail} The outcome will come in a later message once an approver "
        "decides; until then do not say that it ran, and do not call it again."
    ),
    OutcomeReason.UNKNOWN_TOOL: "Not executed: there is no tool named {tool!r}.",
    OutcomeReason.EXCLUDED_TOOL: "Not executed: the tool {tool!r} is not available here.",
    OutcomeReason.BAD_ARGUMENTS: (
        "Not executed: invalid arguments for {tool!r}: {detail}. Fix them and call again."
    ),
    OutcomeReason.MALFORMED_JSON: (
        "Not executed: the arguments for {tool!r} are not a JSON object ({detail}). "
        "Send the arguments as one JSON object."
    ),
    OutcomeReason.NO_TOOL_CALL: "Not executed: the tool call names no tool.",
    OutcomeReason.HOOK_CANCELLED: (
        "Not executed: the call to {tool!r} was cancelled by a runtime hook. The tool did not run."
    ),
    OutcomeReason.HOOK_REWRITE_INVALID: (
        "Not executed: a runtime hook changed the call to {tool!r} into an invalid call "
        "({detail}). The tool did not run."
    ),
    OutcomeReason.POLICY_DENIED: (
        "Not executed: this bot's policy does not allow {tool!r}. The tool did not run and "
        "nothing changed; tell the user it is not allowed."
    ),
    OutcomeReason.DENIED_BY_PERSON: (
        "Not executed: a person reviewing this request denied {tool!r}. The tool did not run; "
        "do not say that it did. Ask the user how to proceed."
    ),
    OutcomeReason.APPROVAL_TIMED_OUT: (
        "Not executed: nobody approved {tool!r} in time. The tool did not run and nothing "
        "changed; tell the user it is waiting for an approval that did not come."
    ),
    OutcomeReason.AUTO_DENIED: (
        "Not executed: {tool!r} was not approved by the runtime. {detail} It did not run and "
        "nothing changed; tell the user why, and do not say that it ran or that anyone "
        "refused it."
    ),
    OutcomeReason.DUPLICATE: (
        "Not executed: identical to an earlier call in this step; use that call's result."
    ),
    OutcomeReason.REPEATED_PROMPT: (
        "Not executed: {tool!r} was already refused in this turn with these arguments; it is "
        "not asked again."
    ),
    OutcomeReason.BATCH_FULL: (
        "Not executed: too many tool calls in this turn (limit {detail}). Retry in a later step."
    ),
    OutcomeReason.BUSY: "Not executed: the tool runner is busy. Retry shortly.",
    OutcomeReason.FILE_CHANGED: (
        "Not executed: {tool!r} was approved, but the file changed after the approver was "
        "shown the change (they approved a diff against its earlier content), so the call did "
        "not run and the file was left as it is. Read the file again; if the change is still "
        "wanted, call the tool again and a new card shows the new diff."
    ),
}

INTERRUPTED_BEFORE_RESULT = "Interrupted before result."
INTERRUPTED_BEFORE_LAUNCH = "Interrupted before launch: the tool did not run."
NO_OUTPUT = "(no output)"


def not_executed(
    reason: OutcomeReason, *, call_id: str, tool: str, detail: str = "", retryable: bool = False
) -> ToolOutcome:
    """A synthetic NOT_EXECUTED outcome with the fixed sentence for ``reason``."""
    sentence = _SENTENCES[reason].format(tool=tool, detail=detail)
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.NOT_EXECUTED,
        observation=sentence,
        synthetic=True,
        reason=reason,
        retryable=retryable,
    )


def edited(*, call_id: str, tool: str, replacement: str) -> ToolOutcome:
    """Deny-with-edit: the approver's text replaces the result, sanitised and bounded."""
    clean = "".join(ch for ch in replacement if ch.isprintable() or ch in "\n\t").strip()
    if len(clean) > MAX_REPLY_CHARS:
        clean = clean[:MAX_REPLY_CHARS] + "…"
    text = f"Not executed: the approver answered instead: {clean or '(empty reply)'}"
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.NOT_EXECUTED,
        observation=text,
        synthetic=True,
        reason=OutcomeReason.EDITED,
    )


#: A call of a resumed batch whose earlier resumption was cut off (bot.store.parked's
#: ``cut_off``) and whose tool is not ``retry_safe``: it may have run, and is not run again.
RESULT_UNKNOWN = (
    "Result unknown: the process running {tool!r} stopped before its result was recorded, "
    "so it may or may not have run. It was not run again, because {tool!r} is not safe to "
    "repeat; say so, and have its effect checked before it is asked for again."
)


def result_unknown(*, call_id: str, tool: str) -> ToolOutcome:
    """The outcome of a call that may have run once already and must not run twice."""
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.INTERRUPTED,
        observation=RESULT_UNKNOWN.format(tool=tool),
        synthetic=True,
        reason=OutcomeReason.CANCELLED,
    )


def interrupted(*, call_id: str, tool: str, before_launch: bool) -> ToolOutcome:
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.INTERRUPTED,
        observation=INTERRUPTED_BEFORE_LAUNCH if before_launch else INTERRUPTED_BEFORE_RESULT,
        synthetic=True,
        reason=OutcomeReason.CANCELLED,
        aborted_before_launch=before_launch,
    )


def executed(
    *,
    call_id: str,
    tool: str,
    text: str,
    duration_s: float,
    paths: tuple[str, ...] = (),
    images: tuple[ImagePart, ...] = (),
    failure: ToolFailure | None = None,
) -> ToolOutcome:
    """The handler returned; with a ``failure`` when its tool said the call failed."""
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.EXECUTED,
        observation=text if text.strip() else NO_OUTPUT,
        synthetic=False,
        reason=OutcomeReason.NONE if failure is None else OutcomeReason.FAILED,
        failure=failure,
        duration_s=duration_s,
        paths=paths,
        images=images,
    )


def failed(*, call_id: str, tool: str, error: BaseException, duration_s: float) -> ToolOutcome:
    """The handler raised: ``ClassName: message``, never a traceback."""
    message = str(error).strip()
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.EXECUTED,
        observation=text,
        synthetic=False,
        reason=OutcomeReason.FAILED,
        failure=ToolFailure(kind=FailureKind.RAISED, error=type(error).__name__),
        duration_s=duration_s,
    )


def environment_error(
    *, call_id: str, tool: str, error: BaseException, duration_s: float
) -> ToolOutcome:
    return ToolOutcome(
        call_id=call_id,
        tool=tool,
        status=OutcomeStatus.ENV_ERROR,
        observation=str(error).strip() or type(error).__name__,
        synthetic=False,
        reason=OutcomeReason.ENVIRONMENT,
        duration_s=duration_s,
    )


def progress_reason(outcome: ToolOutcome) -> str:
    """A short reason for a ❌ progress line — never the raw tool output: the failure's
    label (``exit 1``, ``HTTP 404``, ``ToolFailed``) for a call that ran and failed."""
    if outcome.ok:
        return ""
    if outcome.failure is not None:
        return outcome.failure.label
    return outcome.status.value.replace("_", " ")
