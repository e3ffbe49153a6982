"""Observer events of tool calls, and the observer that logs them.

The pipeline reports every call to a :class:`ToolObserver`: ``tool_started`` when a handler
launches, ``tool_finished`` for every outcome (also for calls that never launched). Events
carry only scrubbed text: secrets never reach logs or events. Structured-logging setup lives
in ``bot.ops.logs``; this module only emits events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.scrub import scrub_text

log = structlog.get_logger(__name__)

MAX_EVENT_RESULT_CHARS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    tool: str
    call_id: str
    channel: str
    conversation_id: str
    turn_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished:
    """``result`` is scrubbed and cut; build it with :meth:`of`."""

    tool: str
    call_id: str
    channel: str
    conversation_id: str
    turn_id: str
    status: str
    synthetic: bool
    duration_s: float
    result: str

    @classmethod
    def of(
        cls,
        *,
        tool: str,
        call_id: str,
        channel: str,
        conversation_id: str,
        turn_id: str,
        status: str,
        synthetic: bool,
        duration_s: float,
        result: str,
    ) -> ToolCallFinished:
        """Scrub first, then cut, so that a cut never exposes the start of a secret."""
        clean = scrub_text(result)
        if len(clean) > MAX_EVENT_RESULT_CHARS:
            clean = clean[:MAX_EVENT_RESULT_CHARS] + "…"
        return cls(
            tool=tool,
            call_id=call_id,
            channel=channel,
            conversation_id=conversation_id,
            turn_id=turn_id,
            status=status,
            synthetic=synthetic,
            duration_s=duration_s,
            result=clean,
        )


class ToolObserver(Protocol):
    """Receives tool-call events. Must be quick and must not raise."""

    def tool_started(self, event: ToolCallStarted) -> None: ...

    def tool_finished(self, event: ToolCallFinished) -> None: ...


class LoggingObserver:
    """The default observer: logs each event (``tool_call_started`` at debug level,
    ``tool_call_finished`` at info) and keeps nothing."""

    def tool_started(self, event: ToolCallStarted) -> None:
        log.debug(
            "tool_call_started",
            tool=event.tool,
            call_id=event.call_id,
            channel=event.channel,
            conversation=event.conversation_id,
            turn_id=event.turn_id,
        )

    def tool_finished(self, event: ToolCallFinished) -> None:
        log.info(
            "tool_call_finished",
            tool=event.tool,
            call_id=event.call_id,
            channel=event.channel,
            conversation=event.conversation_id,
            turn_id=event.turn_id,
            status=event.status,
            synthetic=event.synthetic,
            duration_ms=round(event.duration_s * 1000, 2),
        )
