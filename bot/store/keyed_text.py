"""One lookup both small id → text tables share (``display_names``, ``conversation_titles``):
the text kept for each of many keys, read in chunks of :data:`READ_CHUNK` placeholders."""

from __future__ import annotations

from collections.abc import Iterable

from bot.store.engine import Database

#: Keys per query: far below either engine's limit on placeholders.
READ_CHUNK = 200


async def text_by_key(
    db: Database, *, table: str, key: str, text: str, keys: Iterable[str]
) -> dict[str, str]:
    """The ``text`` column of ``table`` for each of ``keys`` found in its ``key`` column
    (keys without a row, and empty ones, are left out). ``table``, ``key`` and ``text`` are
    the caller's constants, never input."""
    wanted = sorted({k for k in keys if k})
    found: dict[str, str] = {}
    for start in range(0, len(wanted), READ_CHUNK):
        chunk = wanted[start : start + READ_CHUNK]
        marks = ", ".join("?" * len(chunk))
        rows = await db.fetchall(
            f"SELECT {key}, {text} FROM {table} WHERE {key} IN ({marks})", chunk
        )
        found.update({str(r[key]): str(r[text]) for r in rows})
    return found
