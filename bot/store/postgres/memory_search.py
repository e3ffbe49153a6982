"""Memory search on PostgreSQL: a ``tsvector`` of each note matched by a ``tsquery``, ranked
by ``ts_rank``.

The one statement of the store that is not portable (SQLite's is FTS5 ``MATCH`` and
``bm25``: :mod:`bot.store.sqlite.memory_search`). The notes' words are indexed by the
expression index ``memory_search`` (``migrations/0001_initial.sql``) as FTS5's
``unicode61`` tokenizer finds them: runs of letters and digits (anything else separates
words, so ``deploy.sh`` holds ``deploy`` rather than being one file-name token, as
PostgreSQL's parser would have it), lower-cased, neither stemmed nor dropped as stop words
(the ``simple`` configuration), so both engines find the same notes. User text never reaches the
query as syntax: its word terms (the same :func:`~bot.store.sqlite.memory_search.fts_query`
rule: ``\\w+``, deduplicated, at most 32) are each quoted as a lexeme and joined with ``|``,
so a note matching more terms ranks higher.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from bot.store.statements import Read, Row

T = TypeVar("T")

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 32

_VECTOR = (
    "to_tsvector('simple'::regconfig,"
    " regexp_replace(m.content || ' ' || m.tags, '[^[:alnum:]]+', ' ', 'g'))"
)
"""A note's words: the expression of the index ``memory_search`` (the same text, so the
planner uses it)."""
_SEARCH = (
    f"SELECT m.* FROM memory AS m, to_tsquery('simple'::regconfig, ?) AS q"
    f" WHERE {_VECTOR} @@ q AND m.scope_key = ?"
    f" ORDER BY ts_rank({_VECTOR}, q) DESC, m.id DESC LIMIT ?"
)


def ts_query(text: str) -> str:
    """A ``to_tsquery`` expression for free ``text``: its word terms, each a quoted lexeme
    (so operators and quotes in the text are inert), joined with ``|``. Empty when the text
    has no word characters."""
    terms: list[str] = []
    for term in _TERM.findall(text.lower()):
        if term not in terms:
            terms.append(term)
    quoted = ["'" + term.replace("\\", "\\\\").replace("'", "''") + "'" for term in terms]
    return " | ".join(quoted[:MAX_QUERY_TERMS])


def memory_search(
    *, scope_key: str, text: str, limit: int, decode: Callable[[list[Row]], T]
) -> Read[T] | None:
    """The query for the ``memory`` rows of ``scope_key`` matching ``text``, best
    ``ts_rank`` first (ties: newest), at most ``limit``; None when ``text`` has no word."""
    expression = ts_query(text)
    if not expression:
        return None
    return Read(_SEARCH, (expression, scope_key, limit), decode)
