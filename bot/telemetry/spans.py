"""The spans the code opens, and what they cost when traces are off: nothing but a call.

Every instrumentation point calls one function of this module (:func:`tool_stage`,
:func:`model_call`, :func:`send`, …). While traces are off (``[telemetry] enabled = false``,
the default), :data:`_live` is None and each function returns a constant: :data:`NOOP`,
whose ``with`` does nothing and whose setters ignore what they are given, or
:data:`NO_TRACE`. No OpenTelemetry module is imported and nothing is allocated per call (the
arguments are positional; attributes are set through methods of the constant). When
:func:`bot.telemetry.setup.install` turns traces on, :data:`_live` becomes the one
:class:`~bot.telemetry.live.Live`, and the same calls open real spans.

What a span may carry is the rule of docs/operations.md#traces: ids, names, sizes, counts and
statuses, never message text, tool arguments or a secret. The functions take exactly those.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

from bot.envelope import IngressEnvelope

if TYPE_CHECKING:
    from bot.telemetry.live import Live

#: An attribute value a span accepts.
Value = str | int | float | bool


class Span:
    """An open span, as its context manager. This base class is the span that is not there
    (:data:`NOOP`): every method does nothing. A live span (:mod:`bot.telemetry.live`)
    records what it is told; leaving its ``with`` by an exception marks it failed with the
    exception's type (never its message)."""

    __slots__ = ()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def set(self, key: str, value: Value) -> None:
        """Set one attribute (an id, a name, a count or a status)."""

    def answered(self, reply: ModelReply | None) -> None:
        """A model call's reply: the model and provider that answered, the tokens reported
        (None: the call was cancelled)."""

    def sent(self, messages: int) -> None:
        """A platform send posted ``messages`` messages."""


class TurnTrace:
    """A turn's trace handed from admission to the session worker; this base class is the
    trace that is not there (:data:`NO_TRACE`: traces are off, or the turn was not admitted
    by :func:`admission`, e.g. one re-queued at start-up, and gets a trace of its own)."""

    __slots__ = ()


NOOP = Span()
NO_TRACE = TurnTrace()

#: The tracer while traces are on (set by :mod:`bot.telemetry.setup` only).
_live: Live | None = None


class ModelUsage(Protocol):
    """The token counts of :class:`bot.providers.base.Usage` a span shows."""

    @property
    def input_tokens(self) -> int: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def estimated(self) -> bool: ...


class ModelReply(Protocol):
    """What a span shows of :class:`bot.providers.base.ProviderReply` (never its text)."""

    @property
    def model(self) -> str: ...

    @property
    def provider(self) -> str: ...

    @property
    def usage(self) -> ModelUsage | None: ...

    @property
    def finish_reason(self) -> str: ...

    @property
    def tool_calls(self) -> tuple[object, ...]: ...


class TracedTurn(Protocol):
    """What a turn's root span shows of :class:`bot.turn.TurnIdentity`."""

    @property
    def turn_id(self) -> str: ...

    @property
    def session_key(self) -> str: ...

    @property
    def envelope(self) -> IngressEnvelope: ...

    @property
    def trace(self) -> TurnTrace: ...


def enabled() -> bool:
    """Whether traces are on in this process."""
    return _live is not None


def admission(envelope: IngressEnvelope) -> Span:
    """Around a message's admission (:meth:`bot.gateway.Gateway.deliver`): the turn's root
    span starts here, with the admission as its first child. A message the admission does
    not queue (refused, a command, a redelivery) ends its root with the admission."""
    live = _live
    if live is None:
        return NOOP
    return live.admission(envelope)


def admitted(turn_id: str) -> TurnTrace:
    """Called where the admission queues the turn: its root span, to be carried with the
    :class:`~bot.turn.TurnIdentity` to :func:`turn`."""
    live = _live
    if live is None:
        return NO_TRACE
    return live.admitted(turn_id)


def turn(identity: TracedTurn) -> Span:
    """Around a turn's run and reply (the session worker): the root span is current, and
    ends when the reply has been sent. Log lines of the turn carry its ``trace_id``."""
    live = _live
    if live is None:
        return NOOP
    return live.turn(identity)


def model_call(provider: str) -> Span:
    """Around one model call of a turn (the agent's provider chain ``provider``)."""
    live = _live
    if live is None:
        return NOOP
    return live.model_call(provider)


def retried(provider: str, status: int | None) -> None:
    """A provider attempt failed and is tried again (an event on the model call, and its
    retry count)."""
    live = _live
    if live is not None:
        live.retried(provider, status)


def tool_stage(stage: str, tool: str, call_id: str) -> Span:
    """Around one stage of a tool call: ``prepare``, ``approval`` (the wait for a person),
    ``execute`` or ``record``."""
    live = _live
    if live is None:
        return NOOP
    return live.tool_stage(stage, tool, call_id)


def send(channel_kind: str, purpose: str) -> Span:
    """Around one platform send: ``purpose`` is ``reply`` (an answer, a failure line, a
    notice), ``message`` (a line of the gateway's own), ``approval_card`` or
    ``progress``."""
    live = _live
    if live is None:
        return NOOP
    return live.send(channel_kind, purpose)


def note(key: str, value: Value) -> None:
    """Set an attribute on the span that is current, if one records (an approval's id on
    the approval wait, a turn's status on its root)."""
    live = _live
    if live is not None:
        live.note(key, value)
