"""Tool definition: :class:`ToolSpec`, the handler signature, and the typed context.

Field order of :class:`ToolSpec` is public: add fields at the end, with defaults.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from bot.envelope import DeliveryTarget
from bot.errors import HatchwayError
from bot.providers.base import ImagePart
from bot.turn import TurnIdentity


class ToolKind(enum.StrEnum):
    """Scheduler bucket of a tool."""

    READ_ONLY = "read_only"
    WRITE = "write"
    EXECUTE = "execute"


class ToolEnvironmentError(HatchwayError):
    """Raised by a handler when the environment is broken (backend down, disk full), as
    opposed to the tool failing on its input. Becomes an ENV_ERROR outcome."""


class FailureKind(enum.StrEnum):
    """How a call that ran failed."""

    EXIT_CODE = "exit_code"  # a command exited with a code other than 0
    HTTP_STATUS = "http_status"  # an HTTP answer with a status of 400 or more
    RAISED = "raised"  # the handler raised (a transport error, an MCP result flagged isError)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFailure:
    """A call that ran and failed, as the tool knows it, never read back from its text.

    ``code`` is the exit code or the HTTP status (``None`` for :attr:`FailureKind.RAISED`);
    ``error`` the exception's class name for a handler that raised (``ToolFailed``,
    ``McpCallFailed``, ``ToolTimeoutError``), else empty.
    """

    kind: FailureKind
    code: int | None = None
    error: str = ""

    @property
    def label(self) -> str:
        """A short fixed phrase for people: ``exit 1``, ``HTTP 404``, ``ToolFailed``."""
        if self.kind is FailureKind.EXIT_CODE:
            return f"exit {self.code}"
        if self.kind is FailureKind.HTTP_STATUS:
            return f"HTTP {self.code}"
        return self.error or "error"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """A handler's rich result: the text the model sees, plus optional file paths it touched
    (for locks and receipts) and images the model is shown with the text (``view_attachment``;
    in this turn only: history keeps ``text``, which should name each image). ``failure`` is
    set by a tool that ran and failed without raising (``shell``'s non-zero exit,
    ``http_fetch``'s status of 400 or more): the model still sees ``text``."""

    text: str
    paths: tuple[str, ...] = ()
    images: tuple[ImagePart, ...] = ()
    failure: ToolFailure | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a tool may know about the call besides its arguments: the turn it runs in and
    the workspace its relative paths resolve against (None: the tool's own).

    Only tools that need it read it; it is never the whole call. The properties read the
    turn's message, so a handler never sees two answers to one question.
    """

    turn: TurnIdentity
    workspace: str | None = None

    @property
    def session_key(self) -> str:
        return self.turn.session_key

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id

    @property
    def channel(self) -> str:
        """The configured channel of the request (``kind.alias``)."""
        return self.turn.channel

    @property
    def conversation_id(self) -> str:
        return self.turn.envelope.conversation_id

    @property
    def requester(self) -> str:
        """The platform user id of who sent the message."""
        return self.turn.envelope.sender.id

    @property
    def delivery(self) -> DeliveryTarget:
        """Where the turn's answers go (for a scheduled job, possibly another channel)."""
        return self.turn.envelope.reply_target

    @property
    def background(self) -> bool:
        """The turn is a scheduled job, not a person's message."""
        return self.turn.envelope.background

    @property
    def is_direct(self) -> bool:
        return self.turn.envelope.is_direct


ToolResult = str | ToolOutput
ToolHandler = Callable[[Mapping[str, object], ToolContext], Awaitable[ToolResult]]
"""``async (arguments, context) -> str | ToolOutput``. Raises ``ToolEnvironmentError`` when the
environment is broken; any other exception is the tool failing; ``CancelledError`` propagates."""


ApprovalCheck = Callable[[Mapping[str, object], ToolContext], bool]
"""Per-call refinement of ``requires_approval``: returns whether *this* call needs a yes
(e.g. ``send_message`` only when the target is another conversation)."""

ApprovalNotes = Callable[[Mapping[str, object], ToolContext], tuple[str, ...]]
"""Lines an approver reads below a call's arguments: how *this* call would run that its
arguments do not show (``shell``: that it may reach the network)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPreview:
    """What an approver is shown of a call's effect beyond its arguments, and what the
    approval binds to besides them (:data:`ApprovalPreview`).

    ``diff``: the lines of a change (a file's unified diff, raw: the card masks and escapes
    them and decides how many it shows). ``notes``: lines below the arguments. ``binding``:
    the state the preview was computed from (a file's content hash); the approval's
    fingerprint includes it and the pipeline compares it with :data:`ApprovalBinding`'s
    answer under the call's path lock before it runs ("file changed"). ``refusal``: the call
    cannot run as asked (its path leaves the workspace): it is refused with no card."""

    diff: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    binding: str = ""
    refusal: str = ""
    #: Arguments ``diff`` shows whole (one fact a line, masked like any argument): the card
    #: does not list them again as arguments.
    covers: tuple[str, ...] = ()


ApprovalPreview = Callable[[Mapping[str, object], ToolContext], Awaitable[CallPreview]]
"""Computed when a person is about to be asked about a call (never for a call the policy
decides alone): its diff and what the approval binds to. Must not change anything."""

ApprovalBinding = Callable[[Mapping[str, object], ToolContext], Awaitable[str]]
"""The :attr:`CallPreview.binding` of a call as things are now (a file's content hash),
asked again under the call's path lock right before it runs."""


def _default_requires_approval() -> bool:
    return True


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool the model may call.

    ``requires_approval`` defaults to True: only tools without side effects should set it
    False. ``kind`` picks the scheduler bucket; ``concurrency_safe`` tools share the per-turn
    gate; ``retry_safe`` tools are retried on transient OS errors; ``channel_aware`` tools get
    missing ``channel``/``to``/``thread`` arguments filled from the envelope; a successful
    ``completes_run`` call ends the turn; ``dedup_exempt`` tools may repeat in one iteration.
    ``path_arguments`` names the arguments that are file paths (locked canonically).
    ``approval_check``, when set, decides per call whether approval is needed.
    ``origin`` names who wrote the name, description and schema when it was not this program
    (``"MCP server docs"``); an approver is shown the description of such a tool.
    ``approval_notes``, when set, gives the lines an approver reads below the arguments.
    ``approval_preview``, when set, shows an approver what the call changes (a diff) and binds
    the approval to the state it saw; ``approval_binding`` reads that state again before the
    call runs.
    """

    name: str
    description: str
    parameters: Mapping[str, object]
    handler: ToolHandler | None = None
    requires_approval: bool = field(default_factory=_default_requires_approval)
    kind: ToolKind = ToolKind.EXECUTE
    concurrency_safe: bool = False
    retry_safe: bool = False
    channel_aware: bool = False
    completes_run: bool = False
    dedup_exempt: bool = False
    timeout_s: float | None = None
    path_arguments: tuple[str, ...] = ()
    approval_check: ApprovalCheck | None = None
    origin: str = ""
    approval_notes: ApprovalNotes | None = None
    approval_preview: ApprovalPreview | None = None
    approval_binding: ApprovalBinding | None = None
