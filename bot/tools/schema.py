"""Argument validation against a tool's JSON Schema, compiled once per schema object.

Compiling a validator costs far more than using one, so :func:`validator_for` keeps one
compiled validator per schema object for the life of the process (specs are immutable and
few, so the cache stays small).

``jsonschema`` (with its format checkers and the bundled meta-schemas, ~60 ms of imports) is
imported when the first validator is compiled, not at start-up: the daemon has no use for it
before its first turn, and imports it in the background right after READY.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from bot.errors import RegistryError

MAX_DETAIL_CHARS = 300


class ArgumentValidator:
    """A compiled JSON-Schema validator for one tool's arguments."""

    __slots__ = ("_best_match", "_validator")

    def __init__(self, schema: Mapping[str, object]) -> None:
        from jsonschema import exceptions, validators

        # JSON values are typed as ``object`` here; the library's stubs want ``Any``
        document = cast(dict[str, Any], schema)
        cls = validators.validator_for(document)
        try:
            cls.check_schema(document)
        except exceptions.SchemaError as exc:
            raise RegistryError(f"invalid parameters schema: {exc.message}") from None
        self._validator = cls(document)
        self._best_match = exceptions.best_match

    def problem(self, arguments: Mapping[str, object]) -> str | None:
        """``None`` when valid, else a short description of the most relevant error."""
        error = self._best_match(self._validator.iter_errors(cast(Mapping[str, Any], arguments)))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        detail = f"{where}: {error.message}" if where else error.message
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
        return detail


_compiled: dict[int, tuple[Mapping[str, object], ArgumentValidator]] = {}


def validator_for(schema: Mapping[str, object]) -> ArgumentValidator:
    """The cached validator of ``schema`` (keyed by identity; the cache keeps the schema
    alive, so an id is never reused while cached). Raises :class:`RegistryError` for a schema
    that is not valid JSON Schema."""
    found = _compiled.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    validator = ArgumentValidator(schema)
    _compiled[id(schema)] = (schema, validator)
    return validator
