"""Traces of turns (OpenTelemetry), free when they are off.

One trace per turn: a root span ``hatchway.turn`` from the message's admission to its
reply, with children for the admission, each model call, each tool call's stages
(``prepare``, ``approval`` inside it, ``execute``, ``record``) and each platform send.
Spans carry ids, names, counts and statuses only (docs/operations.md#traces).

* :mod:`~bot.telemetry.spans`: what the instrumentation points call; while traces are off
  each call returns a constant and nothing of OpenTelemetry is imported;
* :mod:`~bot.telemetry.live`: the spans while traces are on (imported by the setup only);
* :mod:`~bot.telemetry.setup`: ``[telemetry]`` applied at start-up (``install``) and
  undone at the stop (``shutdown``).

The instrumentation points import the functions from this package: ``from bot import
telemetry`` and ``with telemetry.tool_stage("execute", tool, call_id):``.
"""

from __future__ import annotations

from bot.telemetry.spans import (
    NO_TRACE,
    NOOP,
    Span,
    TurnTrace,
    admission,
    admitted,
    enabled,
    model_call,
    note,
    retried,
    send,
    tool_stage,
    turn,
)

__all__ = [
    "NOOP",
    "NO_TRACE",
    "Span",
    "TurnTrace",
    "admission",
    "admitted",
    "enabled",
    "model_call",
    "note",
    "retried",
    "send",
    "tool_stage",
    "turn",
]
