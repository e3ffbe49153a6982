"""A turn as the gateway and the agent both see it: its identity, and the seam between them.

The gateway makes one :class:`TurnIdentity` when it admits a message (or re-queues one at
recovery) and everything that names the turn shares that value instead of copying its
fields: the agent's :class:`~bot.agent.turn.TurnState`, the tool handlers'
:class:`~bot.tools.spec.ToolContext`, the hooks' :class:`~bot.tools.hooks.HookCall` and the
approval gate's :class:`~bot.approval.gate.ApprovalRequest`.

The gateway calls its :data:`TurnRunner` (:class:`bot.agent.runner.AgentRunner`) once per
admitted message, one at a time per session, with the :class:`SessionControl` through which
``/stop`` and shutdown cut the turn short, and sends the :class:`TurnReply` it returns. The
runner never sends, queues or touches another session. Neither side imports the other:
both import this module.
"""

from __future__ import annotations

import contextvars
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.envelope import IngressEnvelope
from bot.store import InboxKey
from bot.telemetry import NO_TRACE, TurnTrace

#: How long a reply key is: a Discord nonce holds at most 25 characters.
REPLY_KEY_CHARS = 24

#: The loop time by which a turn waiting on an approval card parks, just before its budget
#: (``turn_timeout_s``) runs out: a wait that may park is never cancelled by the budget
#: (docs/approvals.md, "Parking and resumption"). None outside a turn's budget.
PARK_BY: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "hatchway_park_by", default=None
)
#: How long before the budget runs out a waiting turn parks: room for the parking writes
#: (at most a twentieth of the budget).
PARK_MARGIN_S = 5.0


def parks_before(deadline: float | None, budget_s: float) -> ParksBy:
    """Within the block, a wait on a card parks before the loop time ``deadline`` (the
    turn budget's end; None: no budget)."""
    return ParksBy(None if deadline is None else deadline - min(PARK_MARGIN_S, budget_s / 20))


class ParksBy:
    """The block of :func:`parks_before`: :data:`PARK_BY` is ``at`` within it (None: left
    as it is). A class, not a generator's context manager: every turn enters one."""

    __slots__ = ("_at", "_token")

    def __init__(self, at: float | None) -> None:
        self._at = at
        self._token: contextvars.Token[float | None] | None = None

    def __enter__(self) -> None:
        if self._at is not None:
            self._token = PARK_BY.set(self._at)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            PARK_BY.reset(self._token)
            self._token = None


class CancelReason(enum.StrEnum):
    """Why a running turn was cancelled: ``/stop``, or the daemon stopping. A turn the stop
    cut off records ``shutdown`` as its inbox entry's error (:class:`TurnReply`)."""

    STOP = "/stop"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnIdentity:
    """One admitted message as a turn: ``turn_id`` is new for every run of the message
    (a message re-queued after a restart gets another one), ``session_key`` names the
    history it reads and extends, ``envelope`` is the message itself. ``trace`` is the
    turn's root span, started at admission (:mod:`bot.telemetry`; :data:`NO_TRACE` while
    traces are off)."""

    turn_id: str
    session_key: str
    envelope: IngressEnvelope
    trace: TurnTrace = field(default=NO_TRACE, compare=False, repr=False)
    #: This run resumes the parked turn waiting on the card of this approval id (its message
    #: is ``envelope``, its batch in :mod:`bot.store.parked`); None for a message's own run.
    resume: str | None = None
    #: The configured channel the message came from, as events and rows name it
    #: (``telegram.main``); made once with the turn (a turn reads it several times).
    channel: str = field(init=False, repr=False, compare=False)
    #: The message's inbox entry (made once, as ``channel``).
    inbox: InboxKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        envelope = self.envelope
        channel = str(envelope.channel)
        object.__setattr__(self, "channel", channel)
        object.__setattr__(self, "inbox", InboxKey(channel=channel, message_id=envelope.message_id))

    @property
    def reply_key(self) -> str:
        """Names this run's replies on the platform (``ChannelSending.send(key=)``), so
        that start-up recovery can look for them."""
        return self.turn_id[:REPLY_KEY_CHARS]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnReply:
    """What a turn leaves for the gateway: the text to send back (None: nothing), and, for a
    turn cut short by the daemon stopping, ``interrupted`` (:attr:`CancelReason.SHUTDOWN`),
    which the inbox entry records as its error instead of marking it done; a scheduled
    (background) run's entry is left unfinished instead, for start-up recovery to run it
    again."""

    text: str | None
    interrupted: CancelReason | None = None
    #: The turn was stopped by ``/stop``: its entry is marked ``done`` with
    #: :attr:`CancelReason.STOP` as its error, which the console's turns page reads.
    stopped: bool = False
    #: ``text`` is already in the outbox ledger as the answer, committed with the answer's
    #: history (the reply's channel can check a delivery): the gateway sends it without
    #: recording it again.
    recorded: bool = False
    #: The turn parked on an approval card (its entry is ``parked``): nothing is sent or
    #: marked now; its resumption finishes the entry.
    parked: bool = False


@dataclass(slots=True)
class SessionControl:
    """Per-session handle a running turn exposes to ``/stop`` and shutdown: the runner
    registers what cancels the turn, the gateway calls :meth:`cancel` with the reason."""

    cancel_callbacks: list[Callable[[CancelReason], None]] = field(default_factory=list)
    #: the reason the turn was cancelled with (None while it was not)
    cancelled: CancelReason | None = None

    def on_cancel(self, callback: Callable[[CancelReason], None]) -> None:
        self.cancel_callbacks.append(callback)

    def cancel(self, reason: CancelReason) -> bool:
        """Cancel the running turn; False when nothing registered to be cancelled, or when
        it was cancelled already: a turn winding down after a ``/stop`` (its notice still
        being recorded and sent) is not stopped, nor counted, a second time, and keeps the
        first reason."""
        if not self.cancel_callbacks or self.cancelled:
            return False
        self.cancelled = reason
        for callback in self.cancel_callbacks:
            callback(reason)
        return True


TurnRunner = Callable[[TurnIdentity, SessionControl], Awaitable[TurnReply]]
"""Runs one turn and returns its :class:`TurnReply`.

The runner marks the turn's inbox entry (:attr:`TurnIdentity.inbox`) ``processing`` in the
same transaction as the turn's first record (:func:`bot.agent.loop.run_turn` does it with
the user message): an entry still ``received`` after a crash left no trace and is run again
by recovery (:func:`bot.gateway.recovery.recover`); a ``processing`` one was cut off and its
sender is told. The gateway marks the entry ``done`` after sending the reply, or ``failed``
(with the interruption's reason as its error)."""
