"""Storage: one database behind one small interface, a SQLite file or a PostgreSQL database.

:class:`Store` opens the database (applying migrations) and exposes one repository per
table; several writes that must commit together go in a :class:`UnitOfWork` handed to
:meth:`Store.commit`. Nothing outside this package writes SQL, and nothing of the engine
leaves it: every failure is a :class:`~bot.errors.StorageError` (``StorageBusy`` when it
passes). The engine (a :class:`bot.store.engine.Database`) is SQLite's
(:mod:`bot.store.sqlite`, a file on a thread of its own: ``[storage] path``, the default) or
PostgreSQL's (:mod:`bot.store.postgres`, a pool of connections: ``[storage] url``);
:func:`bot.wiring.storage.open_store` picks the one the configuration names. See the Storage
section of ``docs/architecture.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar, overload

from bot.store.approvals import Approvals
from bot.store.attachments import AttachmentKind, AttachmentRecord, Attachments
from bot.store.audit import AuditLog
from bot.store.channel_state import ChannelState
from bot.store.context_lines import ContextLines
from bot.store.conversation_titles import ConversationTitles
from bot.store.display_names import DisplayNames
from bot.store.engine import Compaction
from bot.store.engine import Database as Engine
from bot.store.forget import ForgetReport, Forgetting
from bot.store.grants import Grants
from bot.store.history import History
from bot.store.inbox import Inbox, InboxKey, InboxStatus
from bot.store.memory import MemoryNotes
from bot.store.outbox import Outbox, OutboxEntry, ReplyKind, ReplyStatus
from bot.store.pairings import Pairings
from bot.store.parked import ParkedTurns
from bot.store.rate_limits import RateLimitBuckets
from bot.store.replicas import Replicas
from bot.store.retention import Retention
from bot.store.schedules import Schedules
from bot.store.session_owners import SessionOwners
from bot.store.signals import NoSignals, Signals
from bot.store.sqlite import Database
from bot.store.statements import Read
from bot.store.tool_calls import ToolCallRecord, ToolCalls
from bot.store.turns import Turns
from bot.store.unit_of_work import UnitOfWork
from bot.store.usage import UsageLog, UsageRecord
from bot.store.web import WebAccess

__all__ = [
    "AttachmentKind",
    "AttachmentRecord",
    "Compaction",
    "Database",
    "Engine",
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

    def __init__(self, db: Engine) -> None:
        self.db = db
        self.inbox = Inbox(db)
        self.outbox = Outbox(db)
        self.history = History(db)
        self.tool_calls = ToolCalls(db)
        self.turns = Turns(db)
        self.channel_state = ChannelState(db)
        self.memory = MemoryNotes(db)
        self.approvals = Approvals(db)
        self.parked = ParkedTurns(db)
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
        self.display_names = DisplayNames(db)
        self.conversation_titles = ConversationTitles(db)
        self.session_owners = SessionOwners(db)
        self.context_lines = ContextLines(db)
        #: notifications between the processes of the database (PostgreSQL's LISTEN/NOTIFY;
        #: nothing for one process over SQLite)
        self.signals: Signals = NoSignals()

    @classmethod
    async def open(cls, path: str | Path, *, migrate: bool = True, create: bool = True) -> Store:
        """Open the SQLite database at ``path``, applying pending migrations unless
        ``migrate`` is false, creating it unless ``create`` is false (see
        :meth:`Database.open`)."""
        return cls(await Database.open(path, migrate=migrate, create=create))

    @classmethod
    async def open_postgres(
        cls,
        url: str,
        *,
        password: str | None = None,
        migrate: bool = True,
        pool_size: int = 10,
        command_timeout_s: float = 30.0,
        connect_timeout_s: float = 10.0,
    ) -> Store:
        """Open the PostgreSQL database at ``url`` (``password`` from the environment),
        applying pending migrations under an advisory lock unless ``migrate`` is false."""
        from bot.store.postgres import Database as PostgresDatabase

        db = await PostgresDatabase.open(
            url,
            password=password,
            migrate=migrate,
            pool_size=pool_size,
            command_timeout_s=command_timeout_s,
            connect_timeout_s=connect_timeout_s,
        )
        from bot.store.postgres.signals import PgSignals, connector

        store = cls(db)
        store.signals = PgSignals(db, connector(url, password=password))
        return store

    @overload
    async def commit(self, work: UnitOfWork) -> None: ...

    @overload
    async def commit(self, work: UnitOfWork, *, then: Read[T]) -> T: ...

    async def commit(self, work: UnitOfWork, *, then: Read[T] | None = None) -> T | None:
        """Commit ``work``: all of its writes or none (StorageError, nothing written).
        ``then``: a read (e.g. ``store.history.loading(key)``) run after the writes, in the
        same transaction, so it sees them; its value is returned. On SQLite the whole of it
        is one trip to the database thread; on PostgreSQL one transaction on one connection."""
        if then is None:
            await self.db.commit(work.writes)
            return None
        return await self.db.commit(work.writes, then)

    async def compact(self) -> Compaction:
        """Give the pages freed by deletions back to the file system (SQLite's incremental
        vacuum; a file from before it is switched once, by a full rewrite). PostgreSQL's
        autovacuum does its own: nothing is done there."""
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
        await self.signals.aclose()
        await self.db.aclose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
