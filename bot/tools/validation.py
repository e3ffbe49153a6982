"""Lookup and schema validation: is this a tool the turn offers, with valid arguments?

Returns the runnable entry or a NOT_EXECUTED outcome; no handler runs here.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.tools.outcome import OutcomeReason, ToolOutcome, not_executed
from bot.tools.registry import ToolEntry, ToolExecutor


def resolve(
    executor: ToolExecutor,
    *,
    call_id: str,
    name: str,
    arguments: Mapping[str, object],
    after_hook: bool = False,
) -> ToolEntry | ToolOutcome:
    """The entry for ``name`` if it is offered and ``arguments`` match its schema.

    ``after_hook`` words the refusal of a hook's rewrite (a hook cannot smuggle in a bad
    schema or a tool the turn does not offer).
    """
    entry = executor.lookup(name)
    if entry is None:
        if after_hook:
            return not_executed(
                OutcomeReason.HOOK_REWRITE_INVALID,
                call_id=call_id,
                tool=name,
                detail="the tool is not offered here",
            )
        reason = (
            OutcomeReason.EXCLUDED_TOOL
            if executor.is_withheld(name)
            else OutcomeReason.UNKNOWN_TOOL
        )
        return not_executed(reason, call_id=call_id, tool=name)
    problem = entry.validator.problem(arguments)
    if problem is not None:
        reason = OutcomeReason.HOOK_REWRITE_INVALID if after_hook else OutcomeReason.BAD_ARGUMENTS
        return not_executed(reason, call_id=call_id, tool=name, detail=problem)
    return entry
