"""What the bot did, turn by turn: the conversations with recent activity, and a session's
recent turns with the tool calls each made.

A turn is read from its inbox entry (the message it answered: who sent it, its text, when it
arrived and when it finished, how it ended) and the ``tool_calls`` rows of the run the entry
names (``inbox.turn_id``, the run that last began). Both reads are keyset pages over an index:
sessions by ``updated_at`` (``sessions_recent``, migration 0013), a session's entries by
``inbox_session``. ``channels`` is the reader's reach, as in :mod:`bot.store.audit_search`:
``None`` for every channel, else only those, applied in the query.

Each turn also carries the replies sent for its message (``outbox``: the answer, a failure
line or a notice, as sent), read for the whole page in one query.

This module reads what the inbox stores; it writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Params, Row, prefix_params, starts_with
from bot.store.tool_calls import ToolCallRecord, tool_call_record

SESSIONS_PAGE = 50
TURNS_PAGE = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionActivity:
    """A session (a conversation, or one thread or agent of it) and its last activity."""

    session_key: str
    channel: str
    updated_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SentReply:
    """A reply recorded for a turn's message: ``answer``, ``failure`` or ``notice``, its text
    as sent and whether it was (``sending``, ``sent``, ``failed``)."""

    kind: str
    body: str
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRecord:
    """One turn: the inbox entry it answered and the tool calls of its run, in order.
    ``sender_id``, ``sender_name`` and ``text`` come from the stored envelope (empty when it
    cannot be read); ``finished_at`` is when the entry last changed."""

    entry_id: int
    turn_id: str
    channel: str
    message_id: str
    session_key: str
    status: str
    error: str | None
    sender_id: str
    sender_name: str
    text: str
    background: bool
    received_at: float
    finished_at: float
    attempts: int
    tool_calls: tuple[ToolCallRecord, ...]
    replies: tuple[SentReply, ...] = ()

    @property
    def duration_s(self) -> float:
        return max(0.0, self.finished_at - self.received_at)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPage:
    """A session's turns, newest first; ``older`` is the entry id to continue before."""

    turns: tuple[TurnRecord, ...]
    older: int | None


def channel_of(session_key: str) -> str:
    """The ``kind.alias`` a session key starts with."""
    return session_key.partition(":")[0]


def _reach(channels: frozenset[str] | None) -> tuple[str, list[object]]:
    """A condition keeping only session keys of ``channels`` (those that start with
    ``kind.alias:``, compared character for character: a range such as ``>= 'kind.alias:'
    AND < 'kind.alias;'`` depends on the collation, and under ICU's ``en-US`` ``;`` sorts
    before ``:``, so it held nowhere). ``substr`` on the key is an expression no index
    serves, which keeps the planner walking the activity index in page order (the channels'
    rows would have to be sorted)."""
    if channels is None:
        return "", []
    if not channels:
        return " AND 0 = 1", []
    terms: list[str] = []
    params: list[object] = []
    for channel in sorted(channels):
        terms.append(starts_with("session_key"))
        params += prefix_params(f"{channel}:")
    return f" AND ({' OR '.join(terms)})", params


def _envelope_fields(payload: str) -> tuple[str, str, str, bool]:
    """(sender id, sender name, text, background) from a stored envelope; empty values for
    one that is missing or unreadable (rows kept from before the payload was stored)."""
    try:
        data = json.loads(payload) if payload else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    sender = data.get("sender")
    sender = sender if isinstance(sender, dict) else {}
    text = data.get("text")
    return (
        str(sender.get("id") or ""),
        str(sender.get("display_name") or ""),
        text if isinstance(text, str) else "",
        data.get("background") is True,
    )


def sessions_query(
    channels: frozenset[str] | None,
    *,
    channel: str = "",
    before: tuple[float, str] | None = None,
    limit: int = SESSIONS_PAGE,
) -> tuple[str, Params]:
    """The statement of :meth:`Turns.sessions` (exposed for plan checks)."""
    reach, params = _reach(channels)
    sql = f"SELECT session_key, updated_at FROM sessions WHERE 1 = 1{reach}"
    if channel:
        sql += f" AND {starts_with('session_key')}"
        params += prefix_params(f"{channel}:")
    if before is not None:
        sql += " AND updated_at <= ? AND (updated_at < ? OR session_key < ?)"
        params += [before[0], before[0], before[1]]
    sql += " ORDER BY updated_at DESC, session_key DESC LIMIT ?"
    params.append(limit)
    return sql, params


def turns_query(
    session_key: str,
    channels: frozenset[str] | None,
    *,
    before: int | None = None,
    limit: int = TURNS_PAGE,
    sender_id: str = "",
) -> tuple[str, Params]:
    """The statement of :meth:`Turns.for_session` (exposed for plan checks)."""
    reach, params = _reach(channels)
    sql = (
        "SELECT id, channel, message_id, session_key, status, error, payload, turn_id,"
        " attempts, received_at, updated_at FROM inbox"
        f" WHERE session_key = ? AND turn_id IS NOT NULL{reach}"
    )
    params = [session_key, *params]
    if sender_id:
        sql += " AND sender_id = ?"
        params.append(sender_id)
    if before is not None:
        sql += " AND id < ?"
        params.append(before)
    sql += " ORDER BY id DESC LIMIT ?"
    params.append(limit)
    return sql, params


class Turns:
    """Reads sessions and their turns (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def sessions(
        self,
        channels: frozenset[str] | None,
        *,
        channel: str = "",
        before: tuple[float, str] | None = None,
        limit: int = SESSIONS_PAGE,
    ) -> list[SessionActivity]:
        """Sessions in reach (of ``channel`` only, when given), latest activity first,
        older than ``before`` (``(updated_at, session_key)`` of the last one shown)."""
        sql, params = sessions_query(channels, channel=channel, before=before, limit=limit)
        rows = await self._db.fetchall(sql, params)
        return [
            SessionActivity(
                session_key=r["session_key"],
                channel=channel_of(r["session_key"]),
                updated_at=float(r["updated_at"]),
            )
            for r in rows
        ]

    async def sessions_of_sender(
        self, sender_id: str, channels: Sequence[str], *, limit: int = SESSIONS_PAGE
    ) -> list[SessionActivity]:
        """The sessions where ``sender_id`` wrote on ``channels`` (``kind.alias``, the reader's
        reach), latest message first: the inbox's ``(channel, sender_id)`` index finds their
        messages, grouped by session."""
        if not channels:
            return []
        marks = ", ".join("?" * len(channels))
        rows = await self._db.fetchall(
            "SELECT session_key, MAX(updated_at) AS updated_at FROM inbox"
            f" WHERE channel IN ({marks}) AND sender_id = ? GROUP BY session_key"
            " ORDER BY MAX(updated_at) DESC LIMIT ?",
            [*channels, sender_id, limit],
        )
        return [
            SessionActivity(
                session_key=r["session_key"],
                channel=channel_of(r["session_key"]),
                updated_at=float(r["updated_at"]),
            )
            for r in rows
        ]

    async def for_session(
        self,
        session_key: str,
        channels: frozenset[str] | None,
        *,
        before: int | None = None,
        limit: int = TURNS_PAGE,
        sender_id: str = "",
    ) -> TurnPage:
        """The session's turns (of ``sender_id``'s messages only, when given), newest
        first, before entry ``before``; none when the session is out of reach."""
        sql, params = turns_query(
            session_key, channels, before=before, limit=limit + 1, sender_id=sender_id
        )
        rows = await self._db.fetchall(sql, params)
        more = len(rows) > limit
        rows = rows[:limit]
        calls = await self._calls([str(r["turn_id"]) for r in rows])
        replies = await self._replies(channel_of(session_key), [str(r["message_id"]) for r in rows])
        turns = tuple(
            _turn(r, calls.get(str(r["turn_id"]), ()), replies.get(str(r["message_id"]), ()))
            for r in rows
        )
        return TurnPage(turns=turns, older=turns[-1].entry_id if more and turns else None)

    async def _calls(self, turn_ids: Sequence[str]) -> dict[str, tuple[ToolCallRecord, ...]]:
        if not turn_ids:
            return {}
        marks = ", ".join("?" * len(turn_ids))
        rows = await self._db.fetchall(
            f"SELECT * FROM tool_calls WHERE turn_id IN ({marks}) ORDER BY id", list(turn_ids)
        )
        found: dict[str, list[ToolCallRecord]] = {}
        for row in rows:
            record = tool_call_record(row)
            found.setdefault(record.turn_id, []).append(record)
        return {turn: tuple(calls) for turn, calls in found.items()}

    async def _replies(
        self, channel: str, message_ids: Sequence[str]
    ) -> dict[str, tuple[SentReply, ...]]:
        if not message_ids:
            return {}
        marks = ", ".join("?" * len(message_ids))
        rows = await self._db.fetchall(
            "SELECT message_id, kind, body, status FROM outbox"
            f" WHERE channel = ? AND message_id IN ({marks}) ORDER BY id",
            [channel, *message_ids],
        )
        found: dict[str, list[SentReply]] = {}
        for row in rows:
            reply = SentReply(kind=row["kind"], body=row["body"], status=row["status"])
            found.setdefault(str(row["message_id"]), []).append(reply)
        return {message: tuple(replies) for message, replies in found.items()}


def _turn(
    row: Row, calls: tuple[ToolCallRecord, ...], replies: tuple[SentReply, ...]
) -> TurnRecord:
    sender_id, sender_name, text, background = _envelope_fields(row["payload"] or "")
    return TurnRecord(
        entry_id=int(row["id"]),
        turn_id=str(row["turn_id"]),
        channel=row["channel"],
        message_id=row["message_id"],
        session_key=row["session_key"],
        status=row["status"],
        error=row["error"],
        sender_id=sender_id,
        sender_name=sender_name,
        text=text,
        background=background,
        received_at=float(row["received_at"]),
        finished_at=float(row["updated_at"]),
        attempts=int(row["attempts"]),
        tool_calls=calls,
        replies=replies,
    )
