"""The latest display name of each person who wrote to the bot (``display_names``, migration
0019), for the console to show beside an id.

A name is whatever its owner typed on the platform: it is shown (made visible by the
console, which cleans it as the cards do), never matched on and never used to decide
anything. Each row is keyed by identity (``<kind>:<user id>``, as the console names a
person: ``telegram:12345``). ``hatchway forget`` removes a person's row
(:func:`forget_person`); retention removes rows not seen for ``retention.days``
(:meth:`DisplayNames.prune`).
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.store.engine import Database, Transaction
from bot.store.keyed_text import text_by_key

MAX_NAME_CHARS = 200

_UPSERT = (
    "INSERT INTO display_names (identity, name, seen_at) VALUES (?, ?, ?)"
    " ON CONFLICT (identity) DO UPDATE SET name = excluded.name, seen_at = excluded.seen_at"
)


def identity(kind: str, user_id: str) -> str:
    """How the console names a person: ``telegram:12345``."""
    return f"{kind}:{user_id}"


class DisplayNames:
    """Reads and writes ``display_names``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remember(self, who: str, name: str, now: float) -> None:
        """``who`` goes by ``name`` (cut to :data:`MAX_NAME_CHARS`) as of ``now``."""
        await self._db.execute(_UPSERT, (who, name[:MAX_NAME_CHARS], now))

    async def of(self, identities: Iterable[str]) -> dict[str, str]:
        """The names known for ``identities`` (those without one are left out)."""
        return await text_by_key(
            self._db, table="display_names", key="identity", text="name", keys=identities
        )

    async def prune(self, cutoff: float) -> int:
        """Delete the names not seen since ``cutoff``; how many went."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM display_names WHERE seen_at < ? RETURNING identity", (cutoff,)
        )
        return len(rows)


async def forget_person(tx: Transaction, user_id: str, kind: str | None) -> int:
    """Delete the name kept for platform user ``user_id`` of ``kind`` (of every kind when
    None), in ``tx``; how many rows went. The id is matched whole."""
    if kind is not None:
        rows = await tx.fetchall(
            "DELETE FROM display_names WHERE identity = ? RETURNING identity",
            (identity(kind, user_id),),
        )
        return len(rows)
    escaped = user_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    found = await tx.fetchall(
        "SELECT identity FROM display_names WHERE identity LIKE ? ESCAPE '\\'",
        (f"%:{escaped}",),
    )
    gone = 0
    for row in found:
        who = str(row["identity"])
        if who.partition(":")[2] == user_id:
            gone += len(
                await tx.fetchall(
                    "DELETE FROM display_names WHERE identity = ? RETURNING identity", (who,)
                )
            )
    return gone
