"""Typed tool arguments: every built-in validates its untrusted arguments with pydantic.

The pipeline validates against the JSON schema before a handler runs; handlers validate again
with the model below so that a direct call (tests, another executor) gets the same contract,
and so the handler body works with typed values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.tools.builtin.observation import ToolFailed


class ToolArguments(BaseModel):
    """Base of every built-in's arguments: unknown keys are an error, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


ArgumentsT = TypeVar("ArgumentsT", bound=ToolArguments)


def parse_arguments(model: type[ArgumentsT], arguments: Mapping[str, object]) -> ArgumentsT:
    """Validate ``arguments`` as ``model``; a bad call raises :class:`ToolFailed` naming each
    offending argument, which the model sees as an ordinary failed result."""
    try:
        return model.model_validate(dict(arguments))
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
            problems.append(f"{where}: {err['msg']}")
        raise ToolFailed("invalid arguments: " + "; ".join(problems)) from None


def schema_of(model: type[ToolArguments]) -> dict[str, object]:
    """The JSON schema the model sees for ``model`` (no titles, no additional properties)."""
    schema = model.model_json_schema()
    _drop_titles(schema)
    schema["additionalProperties"] = False
    return schema


def _drop_titles(node: object) -> None:
    if isinstance(node, dict):
        node.pop("title", None)
        for key, value in node.items():
            if key != "properties":
                _drop_titles(value)
            elif isinstance(value, dict):
                for prop in value.values():
                    _drop_titles(prop)
    elif isinstance(node, list):
        for item in node:
            _drop_titles(item)
