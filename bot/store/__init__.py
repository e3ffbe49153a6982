"""Storage: one SQLite file behind one small interface.

:class:`Store` opens the database (applying migrations) and exposes one repository per
table; several writes that must commit together go in a :class:`UnitOfWork` handed to
:meth:`Store.commit`. Nothing outside this package writes SQL, and nothing of the engine
leaves it: every failure is a :class:`~bot.errors.StorageError` (``StorageBusy`` when it
passes). The engine (:class:`Database`, SQLite: :mod:`bot.store.sqlite`) runs on a thread of
its own; see the Storage section of ``docs/architecture.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar, overload

from bot.store.approvals import Approvals
from bot.store.attachments import AttachmentKind, AttachmentRecord, Attachments
from bot.store.audit import AuditLog
from bot.store.channel_state import ChannelState
from bot.store.forget import ForgetReport, Forgetting
from bot.store.grants import Grants
from bot.store.history import History
from bot.store.inbox import Inbox, InboxKey, InboxStatus
from bot.store.memory import MemoryNotes
from bot.store.outbox import Outbox, OutboxEntry, ReplyKind, ReplyStatus
from bot.store.pairings import Pairings
from bot.store.rate_limits import RateLimitBuckets
from bot.store.replicas import Replicas
from bot.store.retention import Retention
from bot.store.schedules import Schedules
from bot.store.sqlite import Compaction, Database
from bot.store.statements import Read
from bot.store.tool_calls import ToolCallRecord, ToolCalls
from bot.store.unit_of_work import UnitOfWork
from bot.store.usage import UsageLog, UsageRecord
from bot.store.web import WebAccess

__all__ = [
    "AttachmentKind",
    "AttachmentRecord",
    "Compaction",
    "Database",
    "ForgetReport",
    "InboxKey",
    "InboxStatus",
    "OutboxEntry",
    "ReplyKind",
    "ReplyStatus",
    "Store",
    "ToolCallRecord",
    "UnitOfWork",
    "UsageRecord",
]

T = TypeVar("T")


class Store:
    """The open database and its repositories."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.inbox = Inbox(db)
        self.outbox = Outbox(db)
        self.history = History(db)
        self.tool_calls = ToolCalls(db)
        self.channel_state = ChannelState(db)
        self.memory = MemoryNotes(db)
        self.approvals = Approvals(db)
        self.grants = Grants(db)
        self.audit = AuditLog(db)
        self.pairings = Pairings(db)
        self.schedules = Schedules(db)
        self.usage = UsageLog(db)
        self.attachments = Attachments(db)
        self.rate_limits = RateLimitBuckets(db)
        self.retention = Retention(db)
        self.replicas = Replicas(db)
        self.forget = Forgetting(db, self.attachments)
        self.web = WebAccess(db)

    @classmethod
    async def open(cls, path: str | Path, *, migrate: bool = True) -> Store:
        """Open the database at ``path``, applying pending migrations unless ``migrate`` is
        false (see :meth:`Database.open`)."""
        return cls(await Database.open(path, migrate=migrate))

    @overload
    async def commit(self, work: UnitOfWork) -> None: ...

    @overload
    async def commit(self, work: UnitOfWork, *, then: Read[T]) -> T: ...

    async def commit(self, work: UnitOfWork, *, then: Read[T] | None = None) -> T | None:
        """Commit ``work``: all of its writes or none (StorageError, nothing written).
        ``then``: a read (e.g. ``store.history.loading(key)``) run after the writes, in the
        same transaction, so it sees them; its value is returned. On SQLite the whole of it
        is one trip to the database thread."""
        if then is None:
            await self.db.commit(work.writes)
            return None
        return await self.db.commit(work.writes, then)

    async def compact(self) -> Compaction:
        """Give the pages freed by deletions back to the file system (SQLite's incremental
        vacuum; a file from before it is switched once, by a full rewrite)."""
        return await self.db.compact()

    async def check_writable(self) -> None:
        """Return when the database accepts a write transaction now (nothing is written);
        StorageError otherwise (StorageBusy when another connection holds it)."""
        await self.db.check_writable()

    async def integrity_check(self) -> str:
        """The engine's own consistency check: ``"ok"`` or what is wrong."""
        return await self.db.integrity_check()

    async def schema_version(self) -> int:
        """The number of the last migration applied."""
        return await self.db.schema_version()

    async def aclose(self) -> None:
        await self.db.aclose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
