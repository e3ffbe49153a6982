"""The approval gate interface the tool pipeline consumes.

The pipeline first asks :meth:`ApprovalGate.assess` (policy only: deny list, level,
always_ask, grants, auto_approve) for every prepared call of a batch; if any call needs a
person, the batch runs sequentially and :meth:`ApprovalGate.ask` is awaited for each such
call in turn. The gate owns auditing of its decisions.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from bot.approval.reasons import (
    POLICY_PREFIX,
    RUNTIME,
    PolicyReason,
    RuntimeReason,
    policy_text,
)
from bot.store.audit import Decision
from bot.turn import TurnIdentity


class Assessment(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyResult:
    """What the policy made of a call, and the rule that decided it; ``grant_id`` names the
    grant when that rule is :attr:`PolicyReason.GRANT` (and only then)."""

    assessment: Assessment
    reason: PolicyReason
    grant_id: int | None = None
    #: How many distinct approvers an ask needs (more than 1 only for
    #: :attr:`PolicyReason.QUORUM`).
    quorum: int = 1

    def __post_init__(self) -> None:
        if (self.reason is PolicyReason.GRANT) != (self.grant_id is not None):
            raise ValueError(f"{self.reason!r} with grant id {self.grant_id!r}")
        if (self.reason is PolicyReason.QUORUM) != (self.quorum > 1):
            raise ValueError(f"{self.reason!r} with quorum {self.quorum!r}")

    @property
    def text(self) -> str:
        """The rule's words, as logs show them (``deny list``, ``grant #12``)."""
        return policy_text(self.reason, self.grant_id)

    @property
    def audit_reason(self) -> str:
        """What the policy's audit row stores as its reason (``policy: grant #12``)."""
        return f"{POLICY_PREFIX}{self.text}"


#: The decisions an ask can end in (the policy's and refused clicks' are audited elsewhere).
_ASK_DECISIONS = frozenset(
    {
        Decision.APPROVED,
        Decision.ALWAYS,
        Decision.DENIED,
        Decision.EDITED,
        Decision.AUTO_DENIED,
        Decision.EXPIRED,
    }
)
#: The decisions the runtime makes when no person did.
RuntimeDecision = Literal[Decision.AUTO_DENIED, Decision.EXPIRED]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    """The answer to one ask. ``verdict`` is the decision its audit row records; what the
    model is told comes from it and, for the runtime's decisions, from
    :attr:`RuntimeReason.wording`."""

    verdict: Decision
    decided_by: str  # a person id, ``operator:NAME``, or "runtime"
    replacement_text: str | None = None  # EDITED: what the person wrote instead
    #: Why the runtime decided (AUTO_DENIED, EXPIRED); None when a person did.
    runtime_reason: RuntimeReason | None = None

    def __post_init__(self) -> None:
        if self.verdict not in _ASK_DECISIONS:
            raise ValueError(f"{self.verdict!r} is not a decision an ask ends in")

    @classmethod
    def by_runtime(
        cls, why: RuntimeReason, verdict: RuntimeDecision = Decision.AUTO_DENIED
    ) -> ApprovalDecision:
        """The runtime's own decision for ``why``: ``AUTO_DENIED`` when nobody was asked,
        ``EXPIRED`` when a person was asked and the request closed without an answer."""
        return cls(verdict=verdict, decided_by=RUNTIME, runtime_reason=why)

    @property
    def allowed(self) -> bool:
        return self.verdict in (Decision.APPROVED, Decision.ALWAYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """One call that wants to run, in the turn that makes it (the turn's own
    :class:`~bot.turn.TurnIdentity`, shared, not copied). ``arguments`` are already stripped
    of any ``approved`` marker the model wrote. ``about`` is what a third-party tool says it
    does (already sanitised and marked with its source), shown to an approver; empty for the
    daemon's own tools. ``notes`` are the tool's lines on how this call would run (shown
    below the arguments)."""

    tool: str
    arguments: Mapping[str, object]
    call_id: str
    turn: TurnIdentity
    requires_approval: bool
    about: str = ""
    notes: tuple[str, ...] = ()
    #: The change the call makes, as its tool shows it (a file's unified diff; raw lines the
    #: summary masks, escapes and bounds); empty for most calls.
    diff: tuple[str, ...] = ()
    #: What the approval binds to besides the arguments (the content hash of the file the
    #: diff was computed against); part of the fingerprint when set.
    binding: str = ""
    #: Arguments the tool's preview shows whole in ``diff`` (an ``http_fetch``'s headers
    #: and body, one a line): the card lists them there instead of as a JSON value.
    covered: tuple[str, ...] = ()
    #: Lets the ask park (None: the turn cannot, e.g. the terminal console's).
    park: ParkTicket | None = field(default=None, compare=False, repr=False)
    _fingerprint: str = field(default="", init=False, repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        """:func:`call_fingerprint` of this call, hashed on first use and kept: most calls
        (read-only, auto-approved) never need it, an asked one needs it several times."""
        if not self._fingerprint:
            # Frozen: the cache is filled the way dataclasses fill frozen fields.
            fingerprint = call_fingerprint(self.tool, self.arguments, self.binding)
            object.__setattr__(self, "_fingerprint", fingerprint)
        return self._fingerprint


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


#: The fingerprint's version: version 1 (no prefix) hashes the tool and the arguments;
#: version 2 (``2:``) adds a binding (the content hash of the file a diff was shown for).
FINGERPRINT_V2 = "2:"


def call_fingerprint(tool: str, arguments: Mapping[str, object], binding: str = "") -> str:
    """Tool name + canonical arguments (+ the binding, when there is one), hashed: what an
    approval is bound to. A call without a binding keeps version 1's value, so a row written
    before bindings existed still matches its call."""
    text = f"{tool}\0{canonical_json(dict(arguments))}"
    if not binding:
        return hashlib.sha256(text.encode()).hexdigest()
    return FINGERPRINT_V2 + hashlib.sha256(f"{text}\0{binding}".encode()).hexdigest()


class ApprovalParked(Exception):
    """The ask parked (docs/approvals.md, "Parking and resumption"): the card stays open
    for its whole ``approval.timeout_s`` and the turn's coroutine ends; the turn resumes,
    possibly in another process, once the card is decided."""

    def __init__(self, approval_id: str, since: float) -> None:
        super().__init__(approval_id)
        self.approval_id = approval_id
        #: when the card was posted
        self.since = since


class ParkTicket(Protocol):
    """What lets an ask park: given with an :class:`ApprovalRequest` by a turn that can
    continue in another process (:mod:`bot.tools.parking`)."""

    async def hold(self, approval_id: str, since: float) -> bool:
        """The card ``approval_id`` was created: record what the turn needs to continue.
        False when it cannot park (the ask then keeps the rules of a turn that cannot)."""
        ...

    async def release(self, approval_id: str) -> None:
        """The ask ended in its turn: what :meth:`hold` recorded goes."""
        ...


class ApprovalGate(Protocol):
    async def assess(self, request: ApprovalRequest) -> PolicyResult:
        """Policy only; never waits for a person."""
        ...

    async def ask(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask a person (terminal or backchannel) or auto-deny; audits the decision.
        Must return within the approval timeout; ``CancelledError`` propagates."""
        ...
