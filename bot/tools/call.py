"""Tool-call values as they move through the pipeline.

A :class:`ParsedCall` is what the model asked for, with decoded arguments; a
:class:`PreparedCall` is a call that passed preparation and may run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.tools.registry import ToolEntry
from bot.tools.spec import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedCall:
    """One tool call with decoded JSON-object arguments. ``index`` is its position in the
    model's reply: results go back in that order."""

    index: int
    call_id: str
    name: str
    arguments: Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedCall:
    """A call that survived preparation: ``entry`` is the tool it runs as (looked up once,
    in preparation), ``arguments`` are final (validated, hook-rewritten, delivery-filled,
    marker-stripped). ``approved_by`` is who let it run, as its ``tool_calls`` row records
    it: the person who said yes, ``runtime`` when the policy let a side-effecting call run
    without asking (the same name its audit row gives), ``None`` when it needed no approval."""

    call: ParsedCall
    entry: ToolEntry
    arguments: Mapping[str, object]
    approved_by: str | None = None
    #: What a person's approval bound the call to besides its arguments (a file's content
    #: hash, :attr:`~bot.tools.spec.CallPreview.binding`); checked again before it runs.
    binding: str = ""

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def spec(self) -> ToolSpec:
        return self.entry.spec

    @property
    def name(self) -> str:
        return self.entry.spec.name


@dataclass(frozen=True, slots=True, kw_only=True)
class CallDecision:
    """What the approval step decided about one call, as its audit row says it: the
    ``decision`` (an audit :class:`~bot.store.audit.Decision` value), who decided, the
    reason (``policy: grant #12``, a runtime reason), the grant it runs under and the call's
    fingerprint. A call that needed no approval and met no policy rule has none."""

    decision: str
    decided_by: str
    reason: str = ""
    grant_id: int | None = None
    fingerprint: str = ""
