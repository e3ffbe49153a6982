"""Memory search on SQLite: FTS5 ``MATCH``, ranked by ``bm25``.

The one statement of the store that is not portable (a PostgreSQL engine would use
``tsvector`` and ``ts_rank``), so it belongs to the engine rather than to the ``memory``
repository (:mod:`bot.store.memory`), which hands it a decoder. The FTS5 table
``memory_fts`` mirrors ``memory`` through triggers (``migrations/0001_initial.sql``). User
text never reaches the ``MATCH`` expression as syntax: :func:`fts_query` turns it into
quoted terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from bot.store.statements import Read, Row

T = TypeVar("T")

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32

_SEARCH = (
    "SELECT m.* FROM memory_fts JOIN memory AS m ON m.id = memory_fts.rowid"
    " WHERE memory_fts MATCH ? AND m.scope_key = ?"
    " ORDER BY bm25(memory_fts), m.id DESC LIMIT ?"
)


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression for free ``text``: its word terms, each a quoted string (so
    operators, column filters and quotes in the text are inert), joined with OR so that notes
    matching more terms rank higher. Empty when the text has no word characters."""
    terms: list[str] = []
    for term in _TERM.findall(text.lower()):
        if term not in terms:
            terms.append(term)
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms[:MAX_QUERY_TERMS]]
    return " OR ".join(quoted)


def memory_search(
    *, scope_key: str, text: str, limit: int, decode: Callable[[list[Row]], T]
) -> Read[T] | None:
    """The query for the ``memory`` rows of ``scope_key`` matching ``text``, best bm25 rank
    first (ties: newest), at most ``limit``; None when ``text`` has no word to match."""
    expression = fts_query(text)
    if not expression:
        return None
    return Read(_SEARCH, (expression, scope_key, limit), decode)
