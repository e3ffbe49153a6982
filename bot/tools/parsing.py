"""Parsing: a provider's :class:`ToolCallRequest` becomes a :class:`ParsedCall` or a
NOT_EXECUTED outcome — never an exception.

Ids are normalised first (:func:`normalise_ids`), before the assistant message is written
to history, so that every call has exactly one id that its result can answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from bot.providers.base import ToolCallRequest
from bot.providers.call_id import new_call_id
from bot.tools.call import ParsedCall
from bot.tools.outcome import OutcomeReason, ToolOutcome, not_executed

MAX_JSON_DETAIL = 120


def normalise_ids(requests: Sequence[ToolCallRequest]) -> tuple[ToolCallRequest, ...]:
    """Give a fresh id to every call whose id is missing or already used in this reply."""
    seen: set[str] = set()
    out: list[ToolCallRequest] = []
    for request in requests:
        call_id = request.id.strip()
        if not call_id or call_id in seen:
            call_id = new_call_id()
        seen.add(call_id)
        out.append(request if call_id == request.id else replace(request, id=call_id))
    return tuple(out)


def parse_call(request: ToolCallRequest, index: int) -> ParsedCall | ToolOutcome:
    """Decode one call. Empty argument text means ``{}`` (models send it for no-argument
    tools); anything that is not a JSON object is refused with a synthetic observation."""
    name = request.name.strip()
    if not name:
        return not_executed(OutcomeReason.NO_TOOL_CALL, call_id=request.id, tool="")
    text = request.arguments.strip()
    if not text:
        return ParsedCall(index=index, call_id=request.id, name=name, arguments={})
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        detail = str(exc)[:MAX_JSON_DETAIL]
        return not_executed(
            OutcomeReason.MALFORMED_JSON, call_id=request.id, tool=name, detail=detail
        )
    if not isinstance(value, dict):
        return not_executed(
            OutcomeReason.MALFORMED_JSON,
            call_id=request.id,
            tool=name,
            detail=f"got a JSON {type(value).__name__}",
        )
    return ParsedCall(index=index, call_id=request.id, name=name, arguments=value)
