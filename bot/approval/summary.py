"""The argument summary a person sees before approving a call.

Contract: paths and commands first (the part a reviewer must read), then the other keys in
name order; every value scrubbed (secret-looking keys masked whole, secret-looking text
masked), long values cut, at most ``max_lines`` lines. The result is safe for cards, terminal
prompts, audit rows and logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bot.approval.gate import canonical_json
from bot.scrub import scrub_value

#: Keys shown first, in this order: what a reviewer must see.
PRIORITY_KEYS: tuple[str, ...] = (
    "path",
    "paths",
    "file",
    "filename",
    "directory",
    "dir",
    "cwd",
    "source",
    "destination",
    "target",
    "command",
    "cmd",
    "url",
)
MAX_VALUE_CHARS = 200
MAX_LINES = 12


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text)} chars)"


def _render(value: object) -> str:
    if isinstance(value, str):
        return value
    return canonical_json(value)


def summarise(
    arguments: Mapping[str, object],
    *,
    max_value_chars: int = MAX_VALUE_CHARS,
    max_lines: int = MAX_LINES,
) -> tuple[str, ...]:
    """Scrubbed ``key: value`` lines, paths first, values cut to ``max_value_chars``."""
    scrubbed = {str(k): scrub_value(v, key=str(k)) for k, v in arguments.items()}
    first = [k for k in PRIORITY_KEYS if k in scrubbed]
    rest = sorted(k for k in scrubbed if k not in first)
    keys = first + rest
    lines = [
        f"{key}: {_cut(_render(scrubbed[key]).replace(chr(10), ' ⏎ '), max_value_chars)}"
        for key in keys[:max_lines]
    ]
    if len(keys) > max_lines:
        lines.append(f"… and {len(keys) - max_lines} more argument(s)")
    if not lines:
        lines.append("(no arguments)")
    return tuple(lines)


def summary_json(lines: tuple[str, ...]) -> str:
    """The form stored in audit rows."""
    return json.dumps(list(lines), ensure_ascii=False)
