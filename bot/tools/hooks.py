"""``before_tool_call`` and ``after_tool_call`` hooks.

A before-hook sees each call after validation and may let it pass, rewrite its name or
arguments, cancel it, or *tighten* its approval (require a prompt, or deny). It can never
loosen one: the strictest of the gate's assessment and every hook's ``require`` wins. A
rewrite is validated again by the pipeline. After-hooks observe finished outcomes and must
not raise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from bot.approval.gate import Assessment
from bot.tools.outcome import ToolOutcome
from bot.turn import TurnIdentity

_STRICTNESS = {Assessment.ALLOW: 0, Assessment.ASK: 1, Assessment.DENY: 2}


def strictest(first: Assessment, second: Assessment) -> Assessment:
    """The stricter of two assessments (allow < ask < deny)."""
    return first if _STRICTNESS[first] >= _STRICTNESS[second] else second


@dataclass(frozen=True, slots=True, kw_only=True)
class HookCall:
    """The call a hook sees, in its turn."""

    call_id: str
    name: str
    arguments: Mapping[str, object]
    turn: TurnIdentity


@dataclass(frozen=True, slots=True, kw_only=True)
class HookDecision:
    """A before-hook's answer. ``None`` name/arguments keep the current ones."""

    name: str | None = None
    arguments: Mapping[str, object] | None = None
    cancel: bool = False
    require: Assessment = Assessment.ALLOW


PROCEED = HookDecision()

BeforeToolCall = Callable[[HookCall], Awaitable[HookDecision]]
AfterToolCall = Callable[[HookCall, ToolOutcome], Awaitable[None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolHooks:
    """The hooks of an agent, run in order."""

    before: tuple[BeforeToolCall, ...] = ()
    after: tuple[AfterToolCall, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class HookResult:
    """The combined effect of every before-hook on one call."""

    name: str
    arguments: Mapping[str, object]
    cancelled: bool
    rewritten: bool
    require: Assessment


async def run_before_hooks(hooks: ToolHooks, call: HookCall) -> HookResult:
    """Run the before-hooks in order; each sees the previous one's rewrite. Stops at the
    first cancel."""
    name, arguments = call.name, call.arguments
    rewritten = False
    require = Assessment.ALLOW
    for hook in hooks.before:
        current = HookCall(call_id=call.call_id, name=name, arguments=arguments, turn=call.turn)
        decision = await hook(current)
        require = strictest(require, decision.require)
        if decision.cancel:
            return HookResult(
                name=name,
                arguments=arguments,
                cancelled=True,
                rewritten=rewritten,
                require=require,
            )
        if decision.name is not None and decision.name != name:
            name, rewritten = decision.name, True
        if decision.arguments is not None and decision.arguments != arguments:
            arguments, rewritten = dict(decision.arguments), True
    return HookResult(
        name=name, arguments=arguments, cancelled=False, rewritten=rewritten, require=require
    )


async def run_after_hooks(hooks: ToolHooks, call: HookCall, outcome: ToolOutcome) -> None:
    for hook in hooks.after:
        await hook(call, outcome)
