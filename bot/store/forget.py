"""Forgetting a person or a conversation: their records deleted, the audit trail kept.

:meth:`Forgetting.user` deletes what one sender left on a channel alias (or on every alias):
their inbox entries and the replies recorded for them, the history and tool calls of the
turns they started, the whole history of their direct conversations, the notes they had the
bot keep and every note kept in their direct conversations, the approval requests they made,
their scheduled jobs, the files they sent (rows and files on disk), the group context lines
they wrote in any conversation (:mod:`bot.store.context_lines`), their usage rows (with
the budget notices of their direct conversations), their rate-limit bucket, and their web
console access (sessions, sign-in links, sign-in counters), the titles kept of their direct
conversations (:mod:`bot.store.conversation_titles`) and the display name the console
kept for them (the console names a person by
platform kind, ``telegram:12345``, so forgetting them on one alias signs them out of the
console for every alias of that kind). Records that
must stay keep the row with the person's id replaced by a tombstone (``forgotten:`` and a
random token, the same for every row of one run, so rows of one forgotten person still read
as one person's): audit rows (as requester and as decider), approvals they decided for
others and their approvals toward others' quorums, grants they made.
:meth:`Forgetting.conversation` deletes everything of one conversation (its threads
included, and the titles kept of them) and keeps its audit rows as they are.

Messages still waiting for or in their turn are left alone (counted as in flight): their turn
records them as it ends. The audit table refuses every other change (migration 0011).

With ``dry_run`` the same statements run in a transaction that is rolled back, and files on
disk are counted, not deleted: the report says what a real run would do now.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from bot.store import conversation_titles, display_names
from bot.store.attachments import Attachments
from bot.store.context_lines import forget_conversation, forget_sender
from bot.store.engine import Database, Transaction
from bot.store.inbox import InboxStatus
from bot.store.statements import Row, prefix_params, starts_with
from bot.store.web import forget_person

TOMBSTONE_PREFIX = "forgotten:"
#: Every table a run may remove rows from, and keep rows of with the id replaced: a printed
#: report lists them all, zeros included, so that its shape is the same whatever was found.
REMOVED_TABLES = (
    "approvals",
    "attachments",
    "budget_notices",
    "context_lines",
    "conversation_titles",
    "display_names",
    "inbox",
    "memory",
    "messages",
    "outbox",
    "parked_turns",
    "rate_limit_buckets",
    "schedules",
    "tool_calls",
    "usage",
    "web_known_clients",
    "web_rate_counters",
    "web_sessions",
    "web_sign_ins",
)
TOMBSTONED_TABLES = ("approvals", "audit", "grants")
_CHUNK = 400  # ids per statement, well under SQLite's limit on variables
_FINISHED = (InboxStatus.DONE, InboxStatus.FAILED)


def new_tombstone() -> str:
    """What replaces a forgotten person's id in the records that stay."""
    return f"{TOMBSTONE_PREFIX}{secrets.token_hex(4)}"


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _marks(items: Sequence[object]) -> str:
    return ", ".join("?" for _ in items)


@dataclass(slots=True, kw_only=True)
class ForgetReport:
    """What one run removed and replaced, by table (in the order it was done), and what it
    left: messages in flight, and the person's direct conversations (whose workspace folders
    the caller may remove: the store does not know the workspace). ``dry_run``: nothing was
    removed; the counts are what a real run would remove."""

    tombstone: str
    dry_run: bool = False
    removed: dict[str, int] = field(default_factory=dict)
    tombstoned: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    direct_conversations: list[tuple[str, str]] = field(default_factory=list)

    def add(self, table: str, count: int) -> None:
        self.removed[table] = self.removed.get(table, 0) + count

    def replaced(self, table: str, count: int) -> None:
        self.tombstoned[table] = self.tombstoned.get(table, 0) + count


@dataclass(frozen=True, slots=True)
class _Inbox:
    channel: str
    message_id: str
    session_key: str
    turn_id: str | None
    finished: bool
    direct: bool
    conversation_id: str


def _inbox(row: Row) -> _Inbox:
    direct, conversation = False, ""
    if row["payload"]:
        envelope = json.loads(row["payload"])
        direct, conversation = bool(envelope.get("is_direct")), str(envelope["conversation_id"])
    return _Inbox(
        channel=str(row["channel"]),
        message_id=str(row["message_id"]),
        session_key=str(row["session_key"]),
        turn_id=row["turn_id"],
        finished=row["status"] in _FINISHED,
        direct=direct,
        conversation_id=conversation,
    )


async def _delete_orphan_votes(tx: Transaction) -> None:
    """The quorum votes of approval requests that are gone go with them."""
    await tx.execute(
        "DELETE FROM approval_votes WHERE approval_id NOT IN (SELECT id FROM approvals)", ()
    )


async def _count(tx: Transaction, sql: str, params: Sequence[object]) -> int:
    """Run a ``… RETURNING`` statement; how many rows it touched."""
    return len(await tx.fetchall(sql, params))


#: The inbox error of a parked turn whose person or conversation was forgotten.
FORGOTTEN_WHILE_PARKED = "forgotten while parked"


async def _forget_parked(
    tx: Transaction, where: str, params: Sequence[object], report: ForgetReport
) -> None:
    """Parked turns (:mod:`bot.store.parked`) matching ``where`` go, and their inbox entries
    become ``failed``: finished, they are forgotten with the rest (their cards, once decided
    or expired, resume nothing)."""
    gone = await tx.fetchall(
        f"DELETE FROM parked_turns WHERE {where} RETURNING channel, message_id", params
    )
    if gone:
        report.add("parked_turns", len(gone))
    for row in gone:
        await tx.execute(
            "UPDATE inbox SET status = ?, error = ? WHERE channel = ? AND message_id = ?"
            " AND status = ?",
            (
                InboxStatus.FAILED,
                FORGOTTEN_WHILE_PARKED,
                row["channel"],
                row["message_id"],
                InboxStatus.PARKED,
            ),
        )


class _RolledBack(Exception):
    """Ends a dry run's transaction: what it did is rolled back."""


class Forgetting:
    """``store.forget``: deletes a person's or a conversation's records (module docstring)."""

    def __init__(self, db: Database, attachments: Attachments) -> None:
        self._db = db
        self._attachments = attachments

    async def channels(self) -> set[str]:
        """Every channel (``kind.alias``) the inbox has a message of: where a bare
        conversation id may be."""
        rows = await self._db.fetchall("SELECT DISTINCT channel FROM inbox")
        return {str(r["channel"]) for r in rows}

    async def user(
        self, user_id: str, *, channel: str | None = None, dry_run: bool = False
    ) -> ForgetReport:
        """Forget ``user_id`` on ``channel`` (``kind.alias``), or on every channel; with
        ``dry_run``, only say what that would remove."""
        report = ForgetReport(tombstone=new_tombstone(), dry_run=dry_run)
        with contextlib.suppress(_RolledBack):
            await self._user(user_id, channel, report)
        channels = [channel] if channel is not None else await self._attachment_channels(user_id)
        for ch in channels:
            report.add("attachments", await self._attachments.delete_for_user(ch, user_id, dry_run))
        return report

    async def _user(self, user_id: str, channel: str | None, report: ForgetReport) -> None:
        where, params = ("sender_id = ?", [user_id])
        if channel is not None:
            where, params = ("channel = ? AND sender_id = ?", [channel, user_id])
        async with self._db.transaction() as tx:
            on = "" if channel is None else " AND channel = ?"
            await _forget_parked(
                tx, f"requester = ?{on}", [user_id, *([] if channel is None else [channel])], report
            )
            rows = [
                _inbox(r)
                for r in await tx.fetchall(
                    "SELECT channel, message_id, session_key, turn_id, status, payload"
                    f" FROM inbox WHERE {where}",
                    params,
                )
            ]
            finished = [r for r in rows if r.finished]
            report.in_flight = len(rows) - len(finished)
            directs = sorted({(r.channel, r.conversation_id) for r in finished if r.direct})
            report.direct_conversations = directs
            direct_sessions = sorted({r.session_key for r in finished if r.direct})
            turns = sorted({r.turn_id for r in finished if r.turn_id and not r.direct})
            await self._delete_turns(tx, turns, report)
            for session in direct_sessions:
                await self._delete_session(tx, session, report)
            await self._delete_inbox(tx, finished, report)
            await self._forget_approvals(tx, user_id, channel, report)
            await self._forget_notes(tx, user_id, channel, directs, report)
            await self._forget_usage(tx, user_id, channel, directs, report)
            await self._forget_jobs(tx, report, creator=user_id, channel=channel)
            written_on = {r.channel for r in rows} | ({channel} if channel else set())
            buckets = {f"user:{ch}:{user_id}" for ch in written_on}
            buckets |= {f"conversation:{ch}:{conv}" for ch, conv in directs}
            await self._delete_buckets(tx, sorted(buckets), report)
            report.add("context_lines", await forget_sender(tx, user_id, channel))
            kind = None if channel is None else channel.partition(".")[0]
            for table, removed in (await forget_person(tx, user_id, kind)).items():
                report.add(table, removed)
            report.add("display_names", await display_names.forget_person(tx, user_id, kind))
            titles = 0
            for ch, conv in directs:
                titles += await conversation_titles.forget_conversation(tx, ch, conv)
            report.add("conversation_titles", titles)
            if report.dry_run:
                raise _RolledBack

    async def conversation(
        self, channel: str, conversation_id: str, *, dry_run: bool = False
    ) -> ForgetReport:
        """Forget everything of one conversation of ``channel`` (its threads included); with
        ``dry_run``, only say what that would remove."""
        report = ForgetReport(tombstone=new_tombstone(), dry_run=dry_run)
        with contextlib.suppress(_RolledBack):
            await self._conversation(channel, conversation_id, report)
        report.add(
            "attachments",
            await self._attachments.delete_for_conversation(channel, conversation_id, dry_run),
        )
        return report

    async def _conversation(self, channel: str, conversation_id: str, report: ForgetReport) -> None:
        exact = f"{channel}:{conversation_id}"
        # its threads' sessions: the key and a colon, exactly (case counts, and "%" or "_"
        # in an id are themselves)
        inside = prefix_params(exact + ":")
        async with self._db.transaction() as tx:
            await _forget_parked(
                tx,
                f"channel = ? AND (session_key = ? OR {starts_with('session_key')})",
                [channel, exact, *inside],
                report,
            )
            rows = [
                _inbox(r)
                for r in await tx.fetchall(
                    "SELECT channel, message_id, session_key, turn_id, status, payload"
                    " FROM inbox WHERE channel = ? AND (session_key = ?"
                    f" OR {starts_with('session_key')})",
                    (channel, exact, *inside),
                )
            ]
            finished = [r for r in rows if r.finished]
            report.in_flight = len(rows) - len(finished)
            sessions = await tx.fetchall(
                "SELECT DISTINCT session_key FROM messages WHERE session_key = ?"
                f" OR {starts_with('session_key')}",
                (exact, *inside),
            )
            keys = sorted({str(r["session_key"]) for r in sessions} | {exact})
            for session in keys:
                await self._delete_session(tx, session, report)
            await self._delete_inbox(tx, finished, report)
            report.add(
                "approvals",
                await _count(
                    tx,
                    "DELETE FROM approvals WHERE channel = ? AND conversation_id = ?"
                    " AND status <> 'pending' RETURNING id",
                    (channel, conversation_id),
                ),
            )
            await _delete_orphan_votes(tx)
            report.add(
                "memory",
                await _count(
                    tx,
                    "DELETE FROM memory WHERE scope_key = ? RETURNING id",
                    (f"conversation:{channel}:{conversation_id}",),
                ),
            )
            await self._forget_jobs(tx, report, origin=(channel, conversation_id))
            await self._delete_conversation_usage(tx, channel, conversation_id, report)
            await self._delete_buckets(tx, [f"conversation:{channel}:{conversation_id}"], report)
            report.add("context_lines", await forget_conversation(tx, channel, conversation_id))
            report.add(
                "conversation_titles",
                await conversation_titles.forget_conversation(tx, channel, conversation_id),
            )
            if report.dry_run:
                raise _RolledBack

    # -- the parts ------------------------------------------------------------------------

    async def _delete_turns(self, tx: Transaction, turns: list[str], report: ForgetReport) -> None:
        """The history and tool calls of the turns the person started in shared rooms."""
        for chunk in _chunks(turns):
            marks = _marks(chunk)
            report.add(
                "messages",
                await _count(
                    tx, f"DELETE FROM messages WHERE turn_id IN ({marks}) RETURNING id", chunk
                ),
            )
            report.add(
                "tool_calls",
                await _count(
                    tx, f"DELETE FROM tool_calls WHERE turn_id IN ({marks}) RETURNING id", chunk
                ),
            )

    async def _delete_session(self, tx: Transaction, session: str, report: ForgetReport) -> None:
        """A whole session: its history (every generation) and tool calls."""
        report.add(
            "messages",
            await _count(tx, "DELETE FROM messages WHERE session_key = ? RETURNING id", (session,)),
        )
        await tx.execute("DELETE FROM sessions WHERE session_key = ?", (session,))
        report.add(
            "tool_calls",
            await _count(
                tx, "DELETE FROM tool_calls WHERE session_key = ? RETURNING id", (session,)
            ),
        )

    async def _delete_inbox(
        self, tx: Transaction, entries: list[_Inbox], report: ForgetReport
    ) -> None:
        """Finished inbox entries and the replies recorded for them."""
        by_channel: dict[str, list[str]] = {}
        for entry in entries:
            by_channel.setdefault(entry.channel, []).append(entry.message_id)
        for channel, ids in sorted(by_channel.items()):
            for chunk in _chunks(ids):
                marks = _marks(chunk)
                report.add(
                    "outbox",
                    await _count(
                        tx,
                        f"DELETE FROM outbox WHERE channel = ? AND message_id IN ({marks})"
                        " RETURNING id",
                        (channel, *chunk),
                    ),
                )
                report.add(
                    "inbox",
                    await _count(
                        tx,
                        f"DELETE FROM inbox WHERE channel = ? AND message_id IN ({marks})"
                        " AND status IN (?, ?) RETURNING id",
                        (channel, *chunk, *_FINISHED),
                    ),
                )

    async def _forget_approvals(
        self, tx: Transaction, user_id: str, channel: str | None, report: ForgetReport
    ) -> None:
        """Their decided approval requests go; their id as a decider, in audit rows and
        grants becomes the tombstone (and the name kept with their decisions goes)."""
        on = "" if channel is None else " AND channel = ?"
        scoped = () if channel is None else (channel,)
        stone = report.tombstone
        report.add(
            "approvals",
            await _count(
                tx,
                f"DELETE FROM approvals WHERE requester = ?{on} AND status <> 'pending'"
                " RETURNING id",
                (user_id, *scoped),
            ),
        )
        report.replaced(
            "approvals",
            await _count(
                tx,
                f"UPDATE approvals SET decided_by = ?, decided_by_name = NULL"
                f" WHERE decided_by = ?{on} RETURNING id",
                (stone, user_id, *scoped),
            ),
        )
        await _delete_orphan_votes(tx)
        # their approvals toward others' quorums (counted with the approvals)
        votes_on = (
            ""
            if channel is None
            else " AND approval_id IN (SELECT id FROM approvals WHERE channel = ?)"
        )
        report.replaced(
            "approvals",
            await _count(
                tx,
                f"UPDATE approval_votes SET voter = ?, voter_name = NULL WHERE voter = ?{votes_on}"
                " RETURNING voter",
                (stone, user_id, *scoped),
            ),
        )
        for column in ("requester", "decided_by"):
            report.replaced(
                "audit",
                await _count(
                    tx,
                    f"UPDATE audit SET {column} = ? WHERE {column} = ?{on} RETURNING id",
                    (stone, user_id, *scoped),
                ),
            )
        grants_on = ""
        grant_params: tuple[object, ...] = (stone, user_id)
        if channel is not None:
            grants_on = f" AND (scope = 'global' OR scope_key = ? OR {starts_with('scope_key')})"
            grant_params += (channel, *prefix_params(channel + ":"))
        report.replaced(
            "grants",
            await _count(
                tx,
                f"UPDATE grants SET granted_by = ? WHERE granted_by = ?{grants_on} RETURNING id",
                grant_params,
            ),
        )

    async def _forget_notes(
        self,
        tx: Transaction,
        user_id: str,
        channel: str | None,
        directs: list[tuple[str, str]],
        report: ForgetReport,
    ) -> None:
        """Notes they had kept (on the channel: not those kept in another channel's
        conversations or channel scope), and every note of their direct conversations."""
        params: tuple[object, ...]
        if channel is None:
            sql, params = "DELETE FROM memory WHERE created_by = ? RETURNING id", (user_id,)
        else:
            sql = (
                "DELETE FROM memory WHERE created_by = ? AND (scope_key = ?"
                f" OR {starts_with('scope_key')} OR (NOT {starts_with('scope_key')}"
                f" AND NOT {starts_with('scope_key')})) RETURNING id"
            )
            params = (
                user_id,
                f"channel:{channel}",
                *prefix_params(f"conversation:{channel}:"),
                *prefix_params("conversation:"),
                *prefix_params("channel:"),
            )
        report.add("memory", await _count(tx, sql, params))
        for ch, conversation in directs:
            report.add(
                "memory",
                await _count(
                    tx,
                    "DELETE FROM memory WHERE scope_key = ? RETURNING id",
                    (f"conversation:{ch}:{conversation}",),
                ),
            )

    async def _forget_usage(
        self,
        tx: Transaction,
        user_id: str,
        channel: str | None,
        directs: list[tuple[str, str]],
        report: ForgetReport,
    ) -> None:
        """Their usage rows (they no longer count towards any budget), and everything used
        in their direct conversations."""
        on = "" if channel is None else " AND channel = ?"
        scoped = () if channel is None else (channel,)
        report.add(
            "usage",
            await _count(
                tx, f"DELETE FROM usage WHERE user_id = ?{on} RETURNING id", (user_id, *scoped)
            ),
        )
        for ch, conversation in directs:
            await self._delete_conversation_usage(tx, ch, conversation, report)

    @staticmethod
    async def _delete_conversation_usage(
        tx: Transaction, channel: str, conversation_id: str, report: ForgetReport
    ) -> None:
        """A conversation's usage rows and budget notices."""
        where = "channel = ? AND conversation_id = ?"
        report.add(
            "usage",
            await _count(
                tx, f"DELETE FROM usage WHERE {where} RETURNING id", (channel, conversation_id)
            ),
        )
        report.add(
            "budget_notices",
            await _count(
                tx,
                f"DELETE FROM budget_notices WHERE {where} RETURNING channel",
                (channel, conversation_id),
            ),
        )

    async def _forget_jobs(
        self,
        tx: Transaction,
        report: ForgetReport,
        *,
        creator: str | None = None,
        channel: str | None = None,
        origin: tuple[str, str] | None = None,
    ) -> None:
        """Scheduled jobs the person created, or created in the conversation. A job's spec
        is the JSON of ``bot.schedules.job.JobSpec``: ``creator_id`` and ``origin``
        (``channel``, ``conversation_id``) are read from it."""
        doomed: list[str] = []
        for row in await tx.fetchall("SELECT id, spec FROM schedules"):
            spec = json.loads(row["spec"])
            where = spec.get("origin", {})
            at = (str(where.get("channel", "")), str(where.get("conversation_id", "")))
            in_conversation = origin is not None and at == origin
            by_creator = creator is not None and str(spec.get("creator_id")) == creator
            if in_conversation or (by_creator and channel in (None, at[0])):
                doomed.append(str(row["id"]))
        for chunk in _chunks(doomed):
            report.add(
                "schedules",
                await _count(
                    tx, f"DELETE FROM schedules WHERE id IN ({_marks(chunk)}) RETURNING id", chunk
                ),
            )

    async def _delete_buckets(
        self, tx: Transaction, buckets: Sequence[str], report: ForgetReport
    ) -> None:
        for chunk in _chunks(list(buckets)):
            report.add(
                "rate_limit_buckets",
                await _count(
                    tx,
                    f"DELETE FROM rate_limit_buckets WHERE bucket IN ({_marks(chunk)})"
                    " RETURNING bucket",
                    chunk,
                ),
            )

    async def _attachment_channels(self, user_id: str) -> list[str]:
        rows = await self._db.fetchall(
            "SELECT DISTINCT channel FROM attachments WHERE user_id = ?", (user_id,)
        )
        return [str(r["channel"]) for r in rows]
