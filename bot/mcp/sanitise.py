"""What an MCP server says about its tools, made safe to show: names, descriptions, schemas.

A server is third-party code, and its tool listing reaches the model's request,
``tool_search`` and the approval prompt. Before any of them sees it:

* **text** (a description, every ``title`` and ``description`` inside a schema) loses its
  terminal escape sequences and every character :func:`bot.visible_text.is_invisible`
  names (NUL, ESC, bidi controls such as U+202E, zero-width characters, …) except line
  breaks, and is cut to a cap (:data:`DESCRIPTION_CHARS`, :data:`SCHEMA_TEXT_CHARS`);
* the **description** is marked with its source: ``[from MCP server docs] …``
  (:func:`marked`), so the model and an approver know a third party wrote it;
* the **name** becomes ``server__tool`` in the characters providers accept
  (``[A-Za-z0-9_-]``, at most 64): invisible characters dropped, accented letters folded
  to ASCII, anything else ``_`` (:func:`wrapped_name`);
* the **schema** is rebuilt from the JSON Schema keywords listed here; unknown keywords are
  dropped (they only loosen the model-side check: the server still validates its input).
  What cannot be cleaned without changing what the tool accepts — a property name
  providers refuse, a dirty or over-long enum value, a remote ``$ref``, nesting deeper than
  :data:`SCHEMA_DEPTH`, more than :data:`SCHEMA_CHARS` of JSON, a root that is not an object,
  anything JSON Schema itself rejects — is a :class:`Refusal`; the catalog drops the tool and
  logs why.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from bot.visible_text import is_invisible, visible, without_escapes

SEPARATOR = "__"
NAME_CHARS = 64
DESCRIPTION_CHARS = 1024
SCHEMA_TEXT_CHARS = 512  # a title or description inside a schema
SCHEMA_WORD_CHARS = 256  # an enum/const value, pattern, format, required name, $ref
SCHEMA_CHARS = 20_000  # the whole schema as compact JSON
SCHEMA_DEPTH = 24  # nested JSON objects and arrays
#: Property names every provider accepts (Anthropic's rule; OpenAI's is wider).
PROPERTY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

_ALLOWED = re.compile(r"[A-Za-z0-9_-]")
_MARKER = re.compile(r"\A\[from MCP server [^\]\n]*\] ?")
_BLANK_LINES = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a tool cannot be offered (shown in the ``mcp_tool_refused`` log line)."""

    reason: str


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# -- text --------------------------------------------------------------------------------


def _clean_char(char: str) -> str:
    if not is_invisible(char):
        return char
    if char in "\n\u2028\u2029":
        return "\n"
    if char == "\t" or unicodedata.category(char) == "Zs":
        return " "
    return ""


def clean_text(text: str, limit: int) -> str:
    """``text`` without escape sequences or invisible characters (line breaks kept, at most
    one blank line in a row), cut to ``limit`` characters (the last one ``…`` when cut)."""
    # more than enough to fill the cap after cleaning; bounds the work on huge text
    text = text[: limit * 8].replace("\r\n", "\n")
    text = without_escapes(text)
    if not (text.isascii() and text.isprintable()):
        text = "".join(map(_clean_char, text))
    text = _BLANK_LINES.sub("\n\n", text).strip()
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def marker(server: str) -> str:
    return f"[from MCP server {visible(server)}]"


def marked(server: str, description: str) -> str:
    """The description the model, ``tool_search`` and an approver see: cleaned, prefixed
    with :func:`marker`, at most :data:`DESCRIPTION_CHARS` in all."""
    head = marker(server)
    body = clean_text(description, DESCRIPTION_CHARS - len(head) - 1)
    return f"{head} {body}" if body else head


def unmarked(description: str) -> str:
    """``description`` without its source marker (what ``tool_search`` ranks)."""
    return _MARKER.sub("", description, count=1)


# -- names -------------------------------------------------------------------------------


def _name_char(char: str) -> str:
    if _ALLOWED.fullmatch(char):
        return char
    if is_invisible(char):
        return ""
    folded = "".join(c for c in unicodedata.normalize("NFKD", char) if _ALLOWED.fullmatch(c))
    return folded or "_"


def wrapped_name(server: str, tool: str) -> str:
    """``server__tool`` in ``[A-Za-z0-9_-]``, cut to the providers' limit of 64."""
    raw = without_escapes(f"{server}{SEPARATOR}{tool}")
    name = "".join(map(_name_char, raw))
    return name[:NAME_CHARS]


def usable_name(tool: str) -> bool:
    """A tool name keeps at least one letter or digit once wrapped."""
    return any(c.isalnum() for c in "".join(map(_name_char, without_escapes(tool))))


# -- schemas -----------------------------------------------------------------------------

_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
_TEXT = frozenset({"title", "description"})
_NUMBER = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "minContains",
        "maxContains",
    }
)
_FLAG = frozenset({"uniqueItems", "readOnly", "writeOnly", "deprecated", "nullable"})
_WORD = frozenset({"format", "pattern", "contentMediaType", "contentEncoding", "$schema"})
_SUBSCHEMA = frozenset(
    {
        "items",
        "additionalItems",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
        "propertyNames",
        "contains",
        "not",
        "if",
        "then",
        "else",
    }
)
_SUBSCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_EXACT = frozenset({"enum", "const"})  # what the tool accepts: refused when dirty
_EXAMPLE = frozenset({"default", "examples"})  # annotations: dropped when dirty


def _word(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{what} is not a string")
    if len(value) > SCHEMA_WORD_CHARS:
        raise _Refused(f"{what} longer than {SCHEMA_WORD_CHARS} characters")
    if any(map(is_invisible, value)):
        raise _Refused(f"{what} contains control or invisible characters")
    return value


def _value(value: object, depth: int, what: str) -> object:
    """A JSON value (enum member, const, default) whose strings must be clean words."""
    if depth > SCHEMA_DEPTH:
        raise _Refused(f"schema nested deeper than {SCHEMA_DEPTH} levels")
    if isinstance(value, str):
        return _word(value, what)
    if isinstance(value, list):
        return [_value(v, depth + 1, what) for v in value]
    if isinstance(value, dict):
        return {_word(k, what): _value(v, depth + 1, what) for k, v in value.items()}
    return value


def _type(value: object) -> object:
    types = value if isinstance(value, list) else [value]
    if not types or not all(isinstance(t, str) and t in _TYPES for t in types):
        raise _Refused("type is not a JSON Schema type")
    return value


def _schema(node: object, depth: int) -> object:
    if depth > SCHEMA_DEPTH:
        raise _Refused(f"schema nested deeper than {SCHEMA_DEPTH} levels")
    if isinstance(node, bool):
        return node
    if not isinstance(node, dict):
        raise _Refused("a subschema is not an object")
    clean: dict[str, object] = {}
    for key, value in node.items():
        if key in _TEXT and isinstance(value, str):
            clean[key] = clean_text(value, SCHEMA_TEXT_CHARS)
        elif key == "type":
            clean[key] = _type(value)
        elif (key in _NUMBER and isinstance(value, int | float)) or (
            key in _FLAG and isinstance(value, bool)
        ):
            clean[key] = value
        elif key in _WORD:
            clean[key] = _word(value, key)
        elif key == "$ref":
            ref = _word(value, key)
            if not ref.startswith("#"):
                raise _Refused("$ref points outside the schema")
            clean[key] = ref
        elif key == "required":
            if not isinstance(value, list):
                raise _Refused("required is not a list")
            clean[key] = [_word(v, "a required name") for v in value]
        elif key in _EXACT:
            clean[key] = _value(value, depth + 1, f"an {key} value")
        elif key in _EXAMPLE:
            try:
                clean[key] = _value(value, depth + 1, key)
            except _Refused:
                continue
        elif key in _SUBSCHEMA:
            # draft-07 tuple form: "items": [schema, …]
            if isinstance(value, list):
                clean[key] = [_schema(v, depth + 2) for v in value]
            else:
                clean[key] = _schema(value, depth + 1)
        elif key in _SUBSCHEMAS:
            if not isinstance(value, list):
                raise _Refused(f"{key} is not a list")
            clean[key] = [_schema(v, depth + 2) for v in value]
        elif key in _NAMED_SCHEMAS:
            clean[key] = _named(key, value, depth)
    return clean


def _named(key: str, value: object, depth: int) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _Refused(f"{key} is not an object")
    named: dict[str, object] = {}
    for name, schema in value.items():
        if key == "properties" and not PROPERTY_NAME.fullmatch(name):
            shown = visible(name[:40])
            raise _Refused(f"property name “{shown}” is not accepted by providers")
        named[_word(name, f"a {key} name")] = _schema(schema, depth + 2)
    return named


def _check(schema: dict[str, object]) -> None:
    """JSON Schema's own verdict (the registry compiles the same schema at turn start)."""
    from jsonschema import exceptions, validators

    document = cast(dict[str, Any], schema)
    try:
        validators.validator_for(document).check_schema(document)
    except exceptions.SchemaError as exc:
        raise _Refused(f"invalid JSON Schema: {clean_text(exc.message, 200)}") from None


def clean_schema(schema: Mapping[str, object]) -> dict[str, object] | Refusal:
    """The input schema as the model sees it (an object schema with ``properties``), or
    why the tool is refused."""
    try:
        clean = _schema(dict(schema), 0)
        if not isinstance(clean, dict):
            raise _Refused("the schema is not an object")
        clean.setdefault("type", "object")
        if clean["type"] != "object":
            raise _Refused("the schema's root is not of type object")
        clean.pop("title", None)
        clean.setdefault("properties", {})
        size = len(json.dumps(clean, separators=(",", ":"), ensure_ascii=False))
        if size > SCHEMA_CHARS:
            raise _Refused(f"schema larger than {SCHEMA_CHARS:,} characters ({size:,})")
        _check(clean)
    except _Refused as refused:
        return Refusal(refused.reason)
    except RecursionError:
        return Refusal("schema too deeply nested")
    return clean
