"""Argument validation against a tool's JSON Schema, compiled once per schema object, on
first use.

Compiling a validator costs far more than using one, so :func:`validator_for` keeps one
:class:`ArgumentValidator` per schema object for the life of the process (specs are
immutable and few, so the cache stays small).

``jsonschema`` (with its format checkers and the bundled meta-schemas, ~50 ms and ~4 MB of
imports) is imported when the first validator is compiled, and a validator is compiled when
its tool is first called, not when the registry is built: a turn that calls no tool (a plain
``hatchway chat`` answer) never loads it. The daemon imports it in the background right after
READY. A schema that is not valid JSON Schema is found then too (:class:`RegistryError`): the
built-in tools' schemas are checked by the tests, and an MCP server's by
:mod:`bot.mcp.sanitise` before its tools are offered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from bot.errors import RegistryError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

    # a compiled validator and the library's pick of the most relevant error
    _Compiled = tuple[Validator, Callable[[Iterable[ValidationError]], ValidationError | None]]

MAX_DETAIL_CHARS = 300


class ArgumentValidator:
    """A tool's arguments checked against its JSON Schema (compiled at the first check)."""

    __slots__ = ("_compiled", "_schema")

    def __init__(self, schema: Mapping[str, object]) -> None:
        self._schema = schema
        self._compiled: _Compiled | None = None

    def check(self) -> None:
        """Compile now. Raises :class:`RegistryError` for a schema that is not valid JSON
        Schema (as :meth:`problem` does on first use)."""
        self._compile()

    def problem(self, arguments: Mapping[str, object]) -> str | None:
        """``None`` when valid, else a short description of the most relevant error."""
        validator, best_match = self._compile()
        error = best_match(validator.iter_errors(cast(Mapping[str, Any], arguments)))
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        detail = f"{where}: {error.message}" if where else error.message
        if len(detail) > MAX_DETAIL_CHARS:
            detail = detail[: MAX_DETAIL_CHARS - 1] + "…"
        return detail

    def _compile(self) -> _Compiled:
        if self._compiled is None:
            from jsonschema import exceptions, validators

            # JSON values are typed as ``object`` here; the library's stubs want ``Any``
            document = cast(dict[str, Any], self._schema)
            cls = validators.validator_for(document)
            try:
                cls.check_schema(document)
            except exceptions.SchemaError as exc:
                raise RegistryError(f"invalid parameters schema: {exc.message}") from None
            self._compiled = (cls(document), exceptions.best_match)
        return self._compiled


_compiled: dict[int, tuple[Mapping[str, object], ArgumentValidator]] = {}


def validator_for(schema: Mapping[str, object]) -> ArgumentValidator:
    """The cached validator of ``schema`` (keyed by identity; the cache keeps the schema
    alive, so an id is never reused while cached). Nothing is compiled yet."""
    found = _compiled.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    validator = ArgumentValidator(schema)
    _compiled[id(schema)] = (schema, validator)
    return validator
