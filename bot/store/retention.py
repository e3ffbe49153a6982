"""Deleting records by age (``[retention]``), table by table, in small batches.

Each ``prune_*`` method deletes the rows older than a cutoff (seconds since the epoch) and
returns how many went. Batches of :data:`BATCH` rows, one transaction each, keep the write
lock short: messages arriving meanwhile wait for one batch, never for the whole job.

- history: whole turns, by the age of the turn's oldest row (a tool call is never left
  without its result, nor a result without its call);
- tool calls, and approval requests no longer pending (with their quorum votes);
- inbox entries whose turn finished (``done``/``failed``; one still to be answered stays,
  whatever its age) and the replies recorded for entries that are gone or finished;
- the display names kept for the console, by when the person last wrote (with the inbox's
  window: a name is kept as long as the messages it came with);
- usage rows and budget notices;
- audit rows: only here, only by age, and only older than the cutoff recorded first in
  ``retention_marks`` (the schema's trigger refuses every other deletion, and any of a row
  younger than 30 days).

``retention_marks`` also keeps when the job last ran, so that a restart does not run it
again before its day is over.
"""

from __future__ import annotations

from bot.store.engine import Database
from bot.store.inbox import InboxStatus

BATCH = 500
LAST_RUN = "last_run_at"
AUDIT_CUTOFF = "audit_delete_before"
_FINISHED = (InboxStatus.DONE, InboxStatus.FAILED)
_SET_MARK = (
    "INSERT INTO retention_marks (name, value) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)


class Retention:
    """``store.retention``: the prune statements and the job's marks."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def last_run(self) -> float | None:
        """When the retention job last finished (None: never)."""
        row = await self._db.fetchone(
            "SELECT value FROM retention_marks WHERE name = ?", (LAST_RUN,)
        )
        return None if row is None else float(row["value"])

    async def record_run(self, at: float) -> None:
        await self._db.execute(_SET_MARK, (LAST_RUN, at))

    async def prune_history(self, cutoff: float) -> int:
        """Messages of turns whose first message is older than ``cutoff``."""
        return await self._batches(
            "DELETE FROM messages WHERE turn_id IN (SELECT turn_id FROM messages"
            " WHERE created_at < ? ORDER BY id LIMIT ?) RETURNING id",
            (cutoff,),
        )

    async def prune_tool_calls(self, cutoff: float) -> tuple[int, int]:
        """Tool call rows, and approval requests no longer pending; (calls, approvals)."""
        calls = await self._batches(
            "DELETE FROM tool_calls WHERE id IN (SELECT id FROM tool_calls"
            " WHERE created_at < ? ORDER BY id LIMIT ?) RETURNING id",
            (cutoff,),
        )
        approvals = await self._batches(
            "DELETE FROM approvals WHERE id IN (SELECT id FROM approvals"
            " WHERE created_at < ? AND status <> 'pending' ORDER BY created_at LIMIT ?)"
            " RETURNING id",
            (cutoff,),
        )
        # a parked turn whose card is gone has nothing left to resume
        await self._db.execute(
            "DELETE FROM parked_turns WHERE updated_at < ? AND NOT EXISTS"
            " (SELECT 1 FROM approvals a WHERE a.id = parked_turns.approval_id)",
            (cutoff,),
        )
        # their quorum votes go with them (counted with the requests)
        await self._db.execute(
            "DELETE FROM approval_votes WHERE approval_id NOT IN (SELECT id FROM approvals)"
        )
        return calls, approvals

    async def prune_inbox(self, cutoff: float) -> tuple[int, int]:
        """Finished inbox entries, then recorded replies whose entry is gone or finished;
        (entries, replies)."""
        entries = await self._batches(
            "DELETE FROM inbox WHERE id IN (SELECT id FROM inbox WHERE updated_at < ?"
            " AND status IN (?, ?) ORDER BY id LIMIT ?) RETURNING id",
            (cutoff, *_FINISHED),
        )
        replies = await self._batches(
            "DELETE FROM outbox WHERE id IN (SELECT o.id FROM outbox o LEFT JOIN inbox i"
            " ON i.channel = o.channel AND i.message_id = o.message_id"
            " WHERE o.updated_at < ? AND (i.id IS NULL OR i.status IN (?, ?))"
            " ORDER BY o.id LIMIT ?) RETURNING id",
            (cutoff, *_FINISHED),
        )
        return entries, replies

    async def prune_display_names(self, cutoff: float) -> int:
        """The names of people who have not written since ``cutoff``."""
        return await self._batches(
            "DELETE FROM display_names WHERE identity IN (SELECT identity FROM display_names"
            " WHERE seen_at < ? ORDER BY identity LIMIT ?) RETURNING identity",
            (cutoff,),
        )

    async def prune_conversation_titles(self, cutoff: float) -> int:
        """The titles of conversations nobody has written in since ``cutoff``."""
        return await self._batches(
            "DELETE FROM conversation_titles WHERE place IN (SELECT place FROM"
            " conversation_titles WHERE seen_at < ? ORDER BY place LIMIT ?) RETURNING place",
            (cutoff,),
        )

    async def prune_usage(self, cutoff: float) -> tuple[int, int]:
        """Usage rows, and budget notices; (rows, notices). A budget's window is a day or a
        month, so a window of usage shorter than a month lets a monthly budget forget part
        of what was spent."""
        rows = await self._batches(
            "DELETE FROM usage WHERE id IN (SELECT id FROM usage WHERE at < ?"
            " ORDER BY id LIMIT ?) RETURNING id",
            (cutoff,),
        )
        notices = len(
            await self._db.execute_returning_all(
                "DELETE FROM budget_notices WHERE at < ? RETURNING at", (cutoff,)
            )
        )
        return rows, notices

    async def prune_audit(self, cutoff: float) -> int:
        """Audit rows older than ``cutoff``: the cutoff is recorded first, for the schema's
        trigger to check each deletion against."""
        await self._db.execute(_SET_MARK, (AUDIT_CUTOFF, cutoff))
        return await self._batches(
            "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ?"
            " ORDER BY id LIMIT ?) RETURNING id",
            (cutoff,),
        )

    async def _batches(self, sql: str, params: tuple[object, ...]) -> int:
        """Run ``sql`` (its last placeholder the batch size) until a batch comes short."""
        total = 0
        while True:
            deleted = len(await self._db.execute_returning_all(sql, (*params, BATCH)))
            total += deleted
            if deleted < BATCH:
                return total
