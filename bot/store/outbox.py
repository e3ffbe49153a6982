"""The outbox ledger: the replies sent for each inbox entry.

A reply is recorded ``sending`` in the last trip before it leaves (:meth:`Outbox.record`)
and ``sent``, with the platform's message ids, after the platform took it — in the
transaction that marks the inbox entry (:meth:`bot.store.UnitOfWork.settle_reply`). After a
crash, an entry whose reply is ``sent`` was answered; one whose reply is still ``sending``
may have been, and start-up recovery asks the platform where it can
(:class:`bot.channel.DeliveryCheck`). Each entry has at most one reply of each
:class:`ReplyKind`.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.inbox import InboxKey
from bot.store.statements import Row, Write


class ReplyKind(enum.StrEnum):
    """What a reply is: the turn's ``answer`` (its text, or the line saying why there is
    none), the ``failure`` line of a turn that raised, or the start-up ``notice`` asking
    its sender to ask again."""

    ANSWER = "answer"
    FAILURE = "failure"
    NOTICE = "notice"
    #: a voice note's transcript posted back (``transcription.echo``): once per entry, and
    #: never what settles it (recovery reads the other kinds)
    TRANSCRIPT = "transcript"


class ReplyStatus(enum.StrEnum):
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxEntry:
    """One recorded reply: ``reply_key`` names it on the platform, ``target`` is the
    delivery target as JSON, ``sent_ids`` the platform message ids once sent."""

    key: InboxKey
    kind: ReplyKind
    reply_key: str
    target: str
    body: str
    status: ReplyStatus
    sent_ids: tuple[str, ...] = ()
    error: str | None = None


_RECORD = (
    "INSERT INTO outbox (channel, message_id, kind, reply_key, target, body, status,"
    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, message_id, kind) DO NOTHING"
)
_SETTLE = (
    "UPDATE outbox SET status = ?, sent_ids = ?, error = ?, updated_at = ?"
    " WHERE channel = ? AND message_id = ? AND kind = ?"
)
_COLUMNS = "channel, message_id, kind, reply_key, target, body, status, sent_ids, error"


def recording_reply(
    key: InboxKey, kind: ReplyKind, *, reply_key: str, target: str, body: str
) -> Write:
    """The write that records a reply as ``sending`` (a second reply of the same kind for
    the same entry is ignored: the first stands)."""
    now = time.time()
    return Write(
        _RECORD,
        [
            (
                key.channel,
                key.message_id,
                kind,
                reply_key,
                target,
                body,
                ReplyStatus.SENDING,
                now,
                now,
            )
        ],
    )


def settling_reply(
    key: InboxKey,
    kind: ReplyKind,
    status: ReplyStatus,
    *,
    sent_ids: Sequence[str] = (),
    error: str | None = None,
) -> Write:
    """The write that ends a reply ``sent`` (with its message ids) or ``failed``."""
    return Write(
        _SETTLE,
        [
            (
                status,
                json.dumps(list(sent_ids)),
                error,
                time.time(),
                key.channel,
                key.message_id,
                kind,
            )
        ],
    )


def _entry(row: Row) -> OutboxEntry:
    return OutboxEntry(
        key=InboxKey(channel=row["channel"], message_id=row["message_id"]),
        kind=ReplyKind(row["kind"]),
        reply_key=row["reply_key"],
        target=row["target"],
        body=row["body"],
        status=ReplyStatus(row["status"]),
        sent_ids=tuple(json.loads(row["sent_ids"])),
        error=row["error"],
    )


class Outbox:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self, key: InboxKey, kind: ReplyKind, *, reply_key: str, target: str, body: str
    ) -> None:
        """Record a reply as ``sending`` (see :func:`recording_reply`)."""
        await self._db.commit(
            [recording_reply(key, kind, reply_key=reply_key, target=target, body=body)]
        )

    async def of_entry(self, key: InboxKey) -> list[OutboxEntry]:
        """The replies recorded for the inbox entry ``key``, in the order recorded."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM outbox WHERE channel = ? AND message_id = ? ORDER BY id",
            (key.channel, key.message_id),
        )
        return [_entry(r) for r in rows]
