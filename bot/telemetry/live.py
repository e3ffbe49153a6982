"""The spans of :mod:`bot.telemetry.spans` when traces are on (OpenTelemetry's API).

Imported only by :func:`bot.telemetry.setup.install`: nothing here loads while traces are
off. The tracer comes from the SDK's ``TracerProvider`` the setup built; the process-wide
OpenTelemetry globals are left alone (a library in the same process keeps its own).

A turn's root span (``hatchway.turn``) starts in :meth:`Live.admission` on the adapter's
task and ends in :meth:`Live.turn` on the session worker's: it is never "current" on the
admission side except through its child, and travels between the two in the
:class:`~bot.turn.TurnIdentity` (:class:`LiveTurnTrace`). Child spans find their parent in
OpenTelemetry's context, a context variable: tasks started inside a turn (a batch's
parallel tool calls, the progress message's task) copy it, so a batch's calls that run side
by side are siblings under the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Self

from opentelemetry import context as otel_context
from opentelemetry import trace
from structlog.contextvars import bind_contextvars, reset_contextvars

from bot.envelope import IngressEnvelope
from bot.telemetry.spans import ModelReply, Span, TracedTurn, TurnTrace, Value

TURN = "hatchway.turn"
ADMISSION = "hatchway.admission"
MODEL_CALL = "hatchway.model.call"
SEND = "hatchway.send"
#: ``hatchway.tool.prepare``, ``….approval``, ``….execute``, ``….record``
TOOL_STAGE = "hatchway.tool."
#: The purpose of the progress message's sends (:func:`bot.telemetry.spans.send`).
PROGRESS = "progress"
#: The longest tool name or call id a span shows.
NAME_CHARS = 200

#: The admission in progress on this task (:meth:`Live.admitted` takes its root).
_admitting: ContextVar[LiveAdmission | None] = ContextVar("hatchway_admitting", default=None)
#: The model call in progress (:meth:`Live.retried` counts on it).
_model_call: ContextVar[LiveSpan | None] = ContextVar("hatchway_model_call", default=None)
#: The turn's root span, for the progress message's sends: its task is started by whatever
#: stage first has a line to show, and would otherwise hang them all under that stage.
_turn_root: ContextVar[trace.Span | None] = ContextVar("hatchway_turn_root", default=None)


class LiveSpan(Span):
    """One span, current while its ``with`` runs."""

    __slots__ = ("_attributes", "_name", "_parent", "_span", "_token", "_tracer", "retries")

    def __init__(
        self,
        tracer: trace.Tracer,
        name: str,
        attributes: dict[str, Value],
        parent: otel_context.Context | None = None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._parent = parent  # None: the current span
        self.retries = 0

    _tracer: trace.Tracer
    _span: trace.Span
    _token: Token[otel_context.Context]

    def __enter__(self) -> Self:
        self._span = self._tracer.start_span(
            self._name, context=self._parent, attributes=self._attributes
        )
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        otel_context.detach(self._token)
        ended(self._span, exc_type)

    def set(self, key: str, value: Value) -> None:
        self._span.set_attribute(key, value)

    def answered(self, reply: ModelReply | None) -> None:
        if reply is None:
            return
        # one call: each attribute set on its own takes the span's lock again
        attributes: dict[str, Value | tuple[str, ...]] = {
            "hatchway.model.tool_calls": len(reply.tool_calls)
        }
        if reply.provider:
            attributes["hatchway.provider.answered"] = reply.provider
        if reply.model:
            attributes["gen_ai.response.model"] = reply.model
        if reply.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = (reply.finish_reason,)
        usage = reply.usage
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
            attributes["hatchway.usage.estimated"] = usage.estimated
        self._span.set_attributes(attributes)

    def sent(self, messages: int) -> None:
        self._span.set_attribute("hatchway.send.messages", messages)


class _ModelSpan(LiveSpan):
    """A model call: also the one :meth:`Live.retried` finds."""

    __slots__ = ("_call",)

    _call: Token[LiveSpan | None]

    def __enter__(self) -> Self:
        super().__enter__()
        self._call = _model_call.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _model_call.reset(self._call)
        super().__exit__(exc_type, exc, tb)


class LiveTurnTrace(TurnTrace):
    """A turn's root span, started at admission and not yet ended."""

    __slots__ = ("root",)

    def __init__(self, root: trace.Span) -> None:
        self.root = root


class LiveAdmission(Span):
    """The root span and its admission child; see :meth:`Live.admission`."""

    __slots__ = ("_admitting", "_envelope", "_root", "_span", "_token", "_tracer", "handed_over")

    def __init__(self, tracer: trace.Tracer, envelope: IngressEnvelope) -> None:
        self._tracer = tracer
        self._envelope = envelope
        self.handed_over = False

    _tracer: trace.Tracer
    _root: trace.Span
    _span: trace.Span
    _token: Token[otel_context.Context]
    _admitting: Token[LiveAdmission | None]

    def __enter__(self) -> Self:
        envelope = self._envelope
        self._root = _turn_root_span(self._tracer, envelope, {})
        self._span = self._tracer.start_span(
            ADMISSION,
            context=trace.set_span_in_context(self._root),
            attributes={
                "hatchway.channel": str(envelope.channel),
                "hatchway.message_id": envelope.message_id,
            },
        )
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        self._admitting = _admitting.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _admitting.reset(self._admitting)
        otel_context.detach(self._token)
        self._span.set_attribute("hatchway.admitted", self.handed_over)
        ended(self._span, exc_type)
        if not self.handed_over:
            # refused, answered as a command, or a redelivery: no turn follows
            self._root.set_attribute("hatchway.admitted", False)
            ended(self._root, exc_type)

    def hand_over(self, turn_id: str) -> LiveTurnTrace:
        self.handed_over = True
        self._root.set_attributes({"hatchway.admitted": True, "hatchway.turn_id": turn_id})
        return LiveTurnTrace(self._root)


class LiveTurn(Span):
    """A turn's root span made current on the session worker; ended on leaving."""

    __slots__ = ("_bound", "_root", "_root_token", "_token", "_tracer", "_turn")

    def __init__(self, tracer: trace.Tracer, turn: TracedTurn) -> None:
        self._tracer = tracer
        self._turn = turn

    _tracer: trace.Tracer
    _root: trace.Span
    _token: Token[otel_context.Context]
    _bound: Mapping[str, Token[Any]]
    _root_token: Token[trace.Span | None]

    def __enter__(self) -> Self:
        turn = self._turn
        envelope = turn.envelope
        if isinstance(turn.trace, LiveTurnTrace):
            root = turn.trace.root
        else:  # not admitted here (re-queued at start-up): a trace of its own
            root = _turn_root_span(self._tracer, envelope, {"hatchway.turn_id": turn.turn_id})
        root.set_attributes(
            {
                "hatchway.session": turn.session_key,
                "hatchway.agent": envelope.agent,
                "hatchway.background": envelope.background,
            }
        )
        self._root = root
        self._token = otel_context.attach(trace.set_span_in_context(root))
        self._root_token = _turn_root.set(root)
        context = root.get_span_context()
        self._bound = (
            bind_contextvars(trace_id=trace.format_trace_id(context.trace_id))
            if context.trace_flags.sampled
            else {}
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bound:
            reset_contextvars(**self._bound)
        _turn_root.reset(self._root_token)
        otel_context.detach(self._token)
        ended(self._root, exc_type)

    def set(self, key: str, value: Value) -> None:
        self._root.set_attribute(key, value)


class Live:
    """The tracer behind :mod:`bot.telemetry.spans` while traces are on."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    def admission(self, envelope: IngressEnvelope) -> Span:
        return LiveAdmission(self.tracer, envelope)

    def admitted(self, turn_id: str) -> TurnTrace:
        admitting = _admitting.get()
        if admitting is None:
            return TurnTrace()
        return admitting.hand_over(turn_id)

    def turn(self, identity: TracedTurn) -> Span:
        return LiveTurn(self.tracer, identity)

    def model_call(self, provider: str) -> Span:
        return _ModelSpan(self.tracer, MODEL_CALL, {"hatchway.provider": provider})

    def retried(self, provider: str, status: int | None) -> None:
        call = _model_call.get()
        if call is None:
            return
        call.retries += 1
        call.set("hatchway.retries", call.retries)
        attributes: dict[str, Value] = {"hatchway.provider": provider}
        if status is not None:
            attributes["http.response.status_code"] = status
        trace.get_current_span().add_event("hatchway.provider.retry", attributes)

    def tool_stage(self, stage: str, tool: str, call_id: str) -> Span:
        return LiveSpan(
            self.tracer,
            TOOL_STAGE + stage,
            # the model writes both: a name and an id, never more than a name's length
            {"hatchway.tool": tool[:NAME_CHARS], "hatchway.call_id": call_id[:NAME_CHARS]},
        )

    def send(self, channel_kind: str, purpose: str) -> Span:
        root = _turn_root.get() if purpose == PROGRESS else None
        return LiveSpan(
            self.tracer,
            SEND,
            {"hatchway.channel.kind": channel_kind, "hatchway.send.purpose": purpose},
            parent=None if root is None else trace.set_span_in_context(root),
        )

    def note(self, key: str, value: Value) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute(key, value)


def _turn_root_span(
    tracer: trace.Tracer, envelope: IngressEnvelope, more: dict[str, Value]
) -> trace.Span:
    """A turn's root span, started at admission or, for a turn not admitted here, when it
    runs: a new trace whatever this task had current, named by its channel and envelope."""
    channel = envelope.channel
    return tracer.start_span(
        TURN,
        context=otel_context.Context(),
        attributes={
            "hatchway.channel": str(channel),
            "hatchway.channel.kind": channel.kind,
            "hatchway.envelope_id": envelope.envelope_id,
            **more,
        },
    )


def ended(span: trace.Span, exc_type: type[BaseException] | None) -> None:
    """End ``span``: a cancellation is noted as such, any other exception makes it an
    error named by its type only (a message may quote what a span must not carry)."""
    if exc_type is not None:
        if issubclass(exc_type, asyncio.CancelledError):
            span.set_attribute("hatchway.cancelled", True)
        else:
            span.set_status(trace.Status(trace.StatusCode.ERROR, exc_type.__name__))
            span.set_attribute("error.type", exc_type.__name__)
    span.end()
