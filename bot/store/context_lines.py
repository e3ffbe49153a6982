"""Group context: messages of a group conversation that were not addressed to the bot.

``context_lines`` holds, per conversation of a channel alias, a bounded window of what other
participants said (:mod:`bot.context` decides what is kept and how the model sees it). Every
line is kept in one trip: the insert (an edit of a kept message rewrites its text, a
redelivery changes nothing) and the trim of the conversation's window, by count and by age,
commit together. A line carries its ``expires_at``; the window is read only up to it, and the
daily retention job deletes what a silent conversation left (:meth:`ContextLines.prune`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.engine import Database, Transaction
from bot.store.statements import Read, Row, Write

#: The longest text kept of one message (characters); the rest is cut.
MAX_LINE_CHARS = 4000

_KEEP = (
    "INSERT INTO context_lines (channel, conversation_id, thread_id, message_id, sender_id,"
    " sender_name, member, text, at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, message_id) DO UPDATE SET text = excluded.text"
)
# the conversation's lines past the window: expired, or older than its newest ``count``
_TRIM = (
    "DELETE FROM context_lines WHERE channel = ? AND conversation_id = ? AND (expires_at <= ?"
    " OR id <= (SELECT w.id FROM context_lines w WHERE w.channel = ? AND w.conversation_id = ?"
    " ORDER BY w.id DESC LIMIT 1 OFFSET ?))"
)
_WINDOW = (
    "SELECT channel, conversation_id, thread_id, message_id, sender_id, sender_name, member,"
    " text, at FROM context_lines WHERE channel = ? AND conversation_id = ?"
    " AND expires_at > ? AND at <= ? ORDER BY id DESC LIMIT ?"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextLine:
    """One message someone else wrote in the conversation, kept or fetched for context.

    ``thread_id`` is ``""`` at a conversation's top level. ``member`` is false for a person
    outside the alias's ``allowed_users`` (kept, and marked as such to the model); ``is_bot``
    marks the bot's own earlier messages in a fetched thread. ``at`` is epoch seconds."""

    channel: str
    conversation_id: str
    thread_id: str = ""
    message_id: str
    sender_id: str
    sender_name: str = ""
    member: bool = True
    is_bot: bool = False
    text: str
    at: float


def _line(row: Row) -> ContextLine:
    return ContextLine(
        channel=str(row["channel"]),
        conversation_id=str(row["conversation_id"]),
        thread_id=str(row["thread_id"]),
        message_id=str(row["message_id"]),
        sender_id=str(row["sender_id"]),
        sender_name=str(row["sender_name"]),
        member=bool(row["member"]),
        text=str(row["text"]),
        at=float(row["at"]),
    )


def _oldest_first(rows: list[Row]) -> list[ContextLine]:
    return [_line(row) for row in reversed(rows)]


class ContextLines:
    """``store.context_lines``: the kept windows of group conversations."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def keep(self, line: ContextLine, *, window: int, keep_s: float) -> None:
        """Keep ``line`` (or rewrite the text of the message it was kept from) and trim its
        conversation to the newest ``window`` lines younger than ``keep_s``: one trip."""
        text = line.text[:MAX_LINE_CHARS]
        await self._db.commit(
            [
                Write(
                    _KEEP,
                    [
                        (
                            line.channel,
                            line.conversation_id,
                            line.thread_id,
                            line.message_id,
                            line.sender_id,
                            line.sender_name[:200],
                            int(line.member),
                            text,
                            line.at,
                            line.at + keep_s,
                        )
                    ],
                ),
                Write(
                    _TRIM,
                    [
                        (
                            line.channel,
                            line.conversation_id,
                            line.at,
                            line.channel,
                            line.conversation_id,
                            window,
                        )
                    ],
                ),
            ]
        )

    def window(
        self,
        channel: str,
        conversation_id: str,
        *,
        now: float,
        before: float,
        limit: int,
    ) -> Read[list[ContextLine]]:
        """The newest ``limit`` lines of one conversation (its threads included) kept at or
        before ``before`` and not yet expired at ``now``, oldest first."""
        return Read(_WINDOW, (channel, conversation_id, now, before, limit), _oldest_first)

    async def read(self, query: Read[list[ContextLine]]) -> list[ContextLine]:
        return await self._db.read(query)

    async def edit(self, channel: str, message_id: str, text: str) -> bool:
        """The kept message was edited; whether a line was kept for it."""
        rows = await self._db.execute_returning_all(
            "UPDATE context_lines SET text = ? WHERE channel = ? AND message_id = ? RETURNING id",
            (text[:MAX_LINE_CHARS], channel, message_id),
        )
        return bool(rows)

    async def drop(self, channel: str, message_id: str) -> bool:
        """The kept message was deleted; whether a line was kept for it."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM context_lines WHERE channel = ? AND message_id = ? RETURNING id",
            (channel, message_id),
        )
        return bool(rows)

    async def prune(self, now: float) -> int:
        """Delete every line past its window (what silent conversations left)."""
        rows = await self._db.execute_returning_all(
            "DELETE FROM context_lines WHERE expires_at <= ? RETURNING id", (now,)
        )
        return len(rows)

    async def count(self) -> int:
        row = await self._db.fetchone("SELECT COUNT(*) AS n FROM context_lines")
        return 0 if row is None else int(row["n"])


async def forget_sender(tx: Transaction, user_id: str, channel: str | None) -> int:
    """Delete, in ``tx``, every line ``user_id`` wrote (on ``channel``, or every alias)."""
    if channel is None:
        sql, params = "DELETE FROM context_lines WHERE sender_id = ? RETURNING id", (user_id,)
        return len(await tx.fetchall(sql, params))
    rows = await tx.fetchall(
        "DELETE FROM context_lines WHERE channel = ? AND sender_id = ? RETURNING id",
        (channel, user_id),
    )
    return len(rows)


async def forget_conversation(tx: Transaction, channel: str, conversation_id: str) -> int:
    """Delete, in ``tx``, every line of one conversation (its threads included)."""
    rows = await tx.fetchall(
        "DELETE FROM context_lines WHERE channel = ? AND conversation_id = ? RETURNING id",
        (channel, conversation_id),
    )
    return len(rows)
