"""JSON laid out for a person: one member a line, indented, in the order written.

What an approval card shows of a structured value (an ``http_fetch`` JSON body, an MCP
tool's nested argument) instead of one line of compact JSON. A key written twice is shown
twice (a server may read either); numbers and constants parsed by :func:`parsed_json` are
shown as written; values under secret keys (:func:`bot.scrub.is_secret_key`) are masked
whole and secrets inside strings masked as in any text, and the caller is told so, to show
the visible marker. Lines come out raw: the card escapes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bot.scrub import MASK, is_secret_key, scrub_text_noting


class _Literal(str):
    """A JSON number or constant, kept as written."""


class _Pairs(list[tuple[str, object]]):
    """A JSON object's members in the order written, repeats kept."""


def parsed_json(text: str) -> object | None:
    """``text`` parsed for :func:`json_lines` (objects as written, numbers as written), or
    None when it is not JSON (or nests deeper than Python recurses)."""
    try:
        parsed: object = json.loads(
            text,
            object_pairs_hook=_Pairs,
            parse_float=_Literal,
            parse_int=_Literal,
            parse_constant=_Literal,
        )
    except (ValueError, RecursionError):
        return None
    return parsed


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, str | list) and not value)


def json_lines(value: object, depth: int = 0, key: str = "") -> tuple[list[str], bool]:
    """``value`` laid out: its first line without indentation, the others indented for
    ``depth``; and whether anything was masked. ``value`` is :func:`parsed_json`'s, or a
    JSON-like Python value (a mapping, a list, a string, a number, ``None``)."""
    if key and is_secret_key(key) and not _empty(value):
        return [json.dumps(MASK)], True
    pad, close = "  " * (depth + 1), "  " * depth
    if isinstance(value, Mapping):
        value = _Pairs((str(k), v) for k, v in value.items())
    if isinstance(value, _Pairs | list | tuple):
        is_object = isinstance(value, _Pairs)
        start, end = ("{", "}") if is_object else ("[", "]")
        if not value:
            return [start + end], False
        lines, masked = [start], False
        for index, item in enumerate(value):
            name, inner = item if is_object else ("", item)
            shown, item_masked = json_lines(inner, depth + 1, str(name))
            masked = masked or item_masked
            label = f"{json.dumps(name, ensure_ascii=False)}: " if is_object else ""
            shown[0] = f"{pad}{label}{shown[0]}"
            if index < len(value) - 1:
                shown[-1] += ","
            lines += shown
        return [*lines, close + end], masked
    if isinstance(value, _Literal):
        return [str(value)], False
    if value is None or isinstance(value, bool | int | float):
        return [json.dumps(value)], False
    text, masked = scrub_text_noting(str(value))
    return [json.dumps(text, ensure_ascii=False)], masked
