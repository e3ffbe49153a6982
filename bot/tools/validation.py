"""Lookup and schema validation: is this a tool the turn offers, with valid arguments?

Returns the runnable entry or a NOT_EXECUTED outcome; no handler runs here. A tool whose
schema is not valid JSON Schema (found when it is first compiled, at the tool's first call)
raises :class:`~bot.errors.RegistryError`: a broken spec, not a bad call.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.errors import RegistryError
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
    try:
        problem = entry.validator.problem(arguments)
    except RegistryError as exc:  # its schema, compiled at its first call, is not valid
        raise RegistryError(f"tool {name!r}: {exc}") from None
    if problem is not None:
        reason = OutcomeReason.HOOK_REWRITE_INVALID if after_hook else OutcomeReason.BAD_ARGUMENTS
        return not_executed(reason, call_id=call_id, tool=name, detail=problem)
    return entry
