"""Storage: SQLite through aiosqlite, behind one small interface.

:class:`Store` opens the database (applying migrations) and exposes one repository per
concern. Nothing outside this package writes SQL.
"""

from __future__ import annotations

from pathlib import Path

from bot.store.approvals import Approvals
from bot.store.audit import AuditLog
from bot.store.channel_state import ChannelState
from bot.store.db import Database
from bot.store.grants import Grants
from bot.store.history import History
from bot.store.inbox import Inbox, InboxKey, InboxStatus
from bot.store.memory import MemoryNotes
from bot.store.pairings import Pairings
from bot.store.schedules import Schedules
from bot.store.tool_calls import ToolCallRecord, ToolCalls

__all__ = ["Database", "InboxKey", "InboxStatus", "Store", "ToolCallRecord"]


class Store:
    """The open database and its repositories."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.inbox = Inbox(db)
        self.history = History(db)
        self.tool_calls = ToolCalls(db)
        self.channel_state = ChannelState(db)
        self.memory = MemoryNotes(db)
        self.approvals = Approvals(db)
        self.grants = Grants(db)
        self.audit = AuditLog(db)
        self.pairings = Pairings(db)
        self.schedules = Schedules(db)

    @classmethod
    async def open(cls, path: str | Path) -> Store:
        return cls(await Database.open(path))

    async def aclose(self) -> None:
        await self.db.aclose()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
