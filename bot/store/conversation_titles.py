"""The latest title of each conversation the bot was written to in (``conversation_titles``,
migration 0021), for the console to show beside an id: a Slack channel's name, a Discord
channel's or thread's name, a Telegram group's title.

A title is whatever the platform's users named the place: it is shown (made visible by the
console, which cleans it as it cleans names), never matched on and never used to decide
anything. Each row is keyed by place, the way a session key starts: ``<kind>.<alias>:<id>``
for a conversation, ``<kind>.<alias>:<id>:<thread>`` for a thread of it (:func:`place`).
``hatchway forget`` removes a conversation's rows with it (:func:`forget_conversation`) and
those of a forgotten person's direct conversations; retention removes rows not seen for
``retention.inbox_days`` (:meth:`bot.store.retention.Retention.prune_conversation_titles`).
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.store.engine import Database, Transaction
from bot.store.keyed_text import text_by_key
from bot.store.statements import prefix_params, starts_with

MAX_TITLE_CHARS = 200

_UPSERT = (
    "INSERT INTO conversation_titles (place, title, seen_at) VALUES (?, ?, ?)"
    " ON CONFLICT (place) DO UPDATE SET title = excluded.title, seen_at = excluded.seen_at"
)


def place(channel: str, conversation_id: str, thread_id: str | None = None) -> str:
    """How a title is kept: ``slack.work:C123``, ``discord.main:42:77`` for a thread."""
    return (
        f"{channel}:{conversation_id}:{thread_id}" if thread_id else f"{channel}:{conversation_id}"
    )


class ConversationTitles:
    """Reads and writes ``conversation_titles``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remember(self, where: str, title: str, now: float) -> None:
        """The place ``where`` is titled ``title`` (cut to :data:`MAX_TITLE_CHARS`) as of
        ``now``."""
        await self._db.execute(_UPSERT, (where, title[:MAX_TITLE_CHARS], now))

    async def of(self, places: Iterable[str]) -> dict[str, str]:
        """The titles known for ``places`` (those without one are left out)."""
        return await text_by_key(
            self._db, table="conversation_titles", key="place", text="title", keys=places
        )


async def forget_conversation(tx: Transaction, channel: str, conversation_id: str) -> int:
    """Delete the titles of one conversation of ``channel`` and of its threads, in ``tx``;
    how many rows went. The id is matched whole."""
    exact = place(channel, conversation_id)
    rows = await tx.fetchall(
        "DELETE FROM conversation_titles WHERE place = ?"
        f" OR {starts_with('place')} RETURNING place",
        (exact, *prefix_params(exact + ":")),
    )
    return len(rows)
