"""Files users sent: one row per file saved when the turn that answered it began.

The bytes live in files (under ``<state_dir>/attachments``, and a copy in the conversation's
workspace); a row says whose they are and where, so that a later turn finds a file by its id
(``view_attachment``) and every deletion, by age (retention), by user or by conversation
(forgetting), takes the files with the rows. Deleting removes the rows first, in one
statement that returns their paths, then the files: a file whose unlink fails is left to the
next sweep of old files, never a row pointing at nothing on purpose.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine import Database
from bot.store.statements import Read, Row, Write


class AttachmentKind(enum.StrEnum):
    """What a file is, judged by its content (never by its name)."""

    IMAGE = "image"
    TEXT = "text"
    PDF = "pdf"
    BINARY = "binary"


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachmentRecord:
    """One saved file. ``path`` is the file under the state directory (the bot's own copy,
    which no tool writes); ``workspace_path`` its copy in the conversation's workspace
    (None when there is none), which the file tools and the shell see. ``created_at`` is
    seconds since the epoch."""

    id: str
    session_key: str
    turn_id: str
    channel: str
    conversation_id: str
    user_id: str
    name: str
    kind: AttachmentKind
    mime_type: str
    size: int
    path: str
    workspace_path: str | None = None
    created_at: float


_COLUMNS = (
    "id, session_key, turn_id, channel, conversation_id, user_id, name, kind, mime_type,"
    " size, path, workspace_path, created_at"
)
_RECORD = f"INSERT INTO attachments ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_RETURNING = " RETURNING path, workspace_path"


def _record(row: Row) -> AttachmentRecord:
    return AttachmentRecord(
        id=row["id"],
        session_key=row["session_key"],
        turn_id=row["turn_id"],
        channel=row["channel"],
        conversation_id=row["conversation_id"],
        user_id=row["user_id"],
        name=row["name"],
        kind=AttachmentKind(row["kind"]),
        mime_type=row["mime_type"],
        size=int(row["size"]),
        path=row["path"],
        workspace_path=row["workspace_path"],
        created_at=float(row["created_at"]),
    )


def _records(rows: list[Row]) -> list[AttachmentRecord]:
    """Oldest first; ids in code point order between files of the same moment (sorted here:
    the same on every engine and collation)."""
    return sorted((_record(r) for r in rows), key=lambda record: (record.created_at, record.id))


def _first(rows: list[Row]) -> AttachmentRecord | None:
    return _record(rows[0]) if rows else None


def recording(*records: AttachmentRecord) -> Write:
    """The write that records ``records`` (for a unit of work, or :meth:`Attachments.record`)."""
    return Write(
        _RECORD,
        [
            (
                r.id,
                r.session_key,
                r.turn_id,
                r.channel,
                r.conversation_id,
                r.user_id,
                r.name,
                r.kind,
                r.mime_type,
                r.size,
                r.path,
                r.workspace_path,
                r.created_at,
            )
            for r in records
        ],
    )


def finding(attachment_id: str) -> Read[AttachmentRecord | None]:
    """The query of :meth:`Attachments.get`."""
    return Read(f"SELECT {_COLUMNS} FROM attachments WHERE id = ?", (attachment_id,), _first)


def _unlink(paths: Sequence[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            os.unlink(path)


class Attachments:
    """The ``attachments`` repository (``store.attachments``)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, *records: AttachmentRecord) -> None:
        """Store saved files' rows, all or none (one trip)."""
        if records:
            await self._db.commit([recording(*records)])

    async def get(self, attachment_id: str) -> AttachmentRecord | None:
        """The file with this id, or None (an unknown id, or one already deleted)."""
        return await self._db.read(finding(attachment_id))

    async def of_session(self, session_key: str) -> list[AttachmentRecord]:
        """The files sent in one session, oldest first."""
        return await self._db.read(
            Read(
                f"SELECT {_COLUMNS} FROM attachments WHERE session_key = ?",
                (session_key,),
                _records,
            )
        )

    async def of_turn(self, turn_id: str) -> list[AttachmentRecord]:
        """The files saved by one run of a turn, in the order they were recorded."""
        return await self._db.read(
            Read(
                f"SELECT {_COLUMNS} FROM attachments WHERE turn_id = ?",
                (turn_id,),
                _records,
            )
        )

    async def delete_older_than(self, cutoff: float) -> int:
        """Delete the rows created before ``cutoff`` (seconds since the epoch) and their
        files (retention); the number of rows deleted."""
        return await self._delete("created_at < ?", (cutoff,))

    async def delete_for_user(self, channel: str, user_id: str, dry_run: bool = False) -> int:
        """Delete every file the user ``user_id`` sent on ``channel`` (``kind.alias``), rows
        and files (forgetting a user); the number of rows deleted (``dry_run``: that would
        be, nothing deleted)."""
        return await self._delete("channel = ? AND user_id = ?", (channel, user_id), dry_run)

    async def delete_for_conversation(
        self, channel: str, conversation_id: str, dry_run: bool = False
    ) -> int:
        """Delete every file sent in the conversation (its threads included), rows and
        files (forgetting a conversation); the number of rows deleted (``dry_run``: that
        would be, nothing deleted)."""
        return await self._delete(
            "channel = ? AND conversation_id = ?", (channel, conversation_id), dry_run
        )

    async def _delete(self, where: str, params: Sequence[object], dry_run: bool = False) -> int:
        if dry_run:
            row = await self._db.fetchone(
                f"SELECT COUNT(*) AS n FROM attachments WHERE {where}", params
            )
            return 0 if row is None else int(row["n"])
        rows = await self._db.execute_returning_all(
            f"DELETE FROM attachments WHERE {where}{_RETURNING}", params
        )
        paths = [p for r in rows for p in (r["path"], r["workspace_path"]) if p]
        if paths:
            await asyncio.to_thread(_unlink, paths)
        return len(rows)
