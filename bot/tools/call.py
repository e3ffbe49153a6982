"""Tool-call values as they move through the pipeline.

A :class:`ParsedCall` is what the model asked for, with decoded arguments; a
:class:`PreparedCall` is a call that passed preparation and may run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.approval.gate import canonical_json
from bot.tools.spec import ToolSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedCall:
    """One tool call with decoded JSON-object arguments. ``index`` is its position in the
    model's reply: results go back in that order."""

    index: int
    call_id: str
    name: str
    arguments: Mapping[str, object]

    @property
    def key(self) -> tuple[str, str]:
        """(name, canonical arguments): what makes two calls identical."""
        return (self.name, canonical_json(dict(self.arguments)))


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedCall:
    """A call that survived preparation: ``arguments`` are final (validated, hook-rewritten,
    delivery-filled, marker-stripped). ``prompted`` says a person was asked and approved it;
    such a batch runs sequentially."""

    call: ParsedCall
    spec: ToolSpec
    arguments: Mapping[str, object]
    prompted: bool = False
    approved_by: str = ""

    @property
    def call_id(self) -> str:
        return self.call.call_id

    @property
    def name(self) -> str:
        return self.spec.name
