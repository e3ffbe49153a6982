"""``?`` placeholders numbered ``$1…``, once per statement text.

The repositories write their statements once, with SQLite's ``?`` placeholders (see
:mod:`bot.store.statements`); PostgreSQL numbers its own. :func:`numbered` rewrites a text
the first time it is seen and remembers the answer, so a statement run a thousand times is
rewritten once (and asyncpg then finds it among the connection's prepared statements by that
same text). A ``?`` inside a quoted literal (``'…'``), a quoted name (``"…"``) or a comment
is text, not a placeholder, and is left alone.
"""

from __future__ import annotations

import functools

_CACHE_SIZE = 2048
"""Distinct statement texts remembered; the repositories write a few hundred."""


@functools.lru_cache(maxsize=_CACHE_SIZE)
def numbered(sql: str) -> str:
    """``sql`` with each ``?`` placeholder replaced by ``$1``, ``$2``, … in order."""
    if "?" not in sql:
        return sql
    out: list[str] = []
    n = 0
    i = 0
    length = len(sql)
    while i < length:
        ch = sql[i]
        if ch in ("'", '"'):
            end = _closing_quote(sql, i, ch)
            out.append(sql[i:end])
            i = end
        elif ch == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            end = length if end < 0 else end
            out.append(sql[i:end])
            i = end
        elif ch == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = length if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
        elif ch == "?":
            n += 1
            out.append(f"${n}")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _closing_quote(sql: str, start: int, quote: str) -> int:
    """The index just past the quoted text opened at ``start`` (a doubled quote inside it
    is part of the text); the end of ``sql`` if it never closes."""
    i = start + 1
    while True:
        end = sql.find(quote, i)
        if end < 0:
            return len(sql)
        if sql.startswith(quote * 2, end):
            i = end + 2
            continue
        return end + 1
