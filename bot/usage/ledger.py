"""What each budget's scope has spent in the current day and month, kept in memory.

The sums come from the ``usage`` table, so they survive a restart: all of them at the first
check and when the day changes (:meth:`bot.store.usage.UsageLog.spending`, one query for
every scope a budget counts in), then every ``refresh_s`` seconds only the rows written since
the last one read (:meth:`~bot.store.usage.UsageLog.charges_after`: what other replicas, and
this process, wrote meanwhile). Between two reads the ledger adds this process's own calls as
their rows are committed (:meth:`SpendLedger.add`), and notes them on the side: the next
read brings them with the rest, so what the side holds is taken out again first. A budget
check is a few dictionary lookups, with no trip to the database, and a refresh costs the
rows of ``refresh_s`` seconds, not the month's.

Reads and commits travel in the database's order, and each result is applied when its trip
returns, in that order too: a call committed before a read is in its rows (its side entry,
added first, is taken out before they go in), one committed after it stays on the side until
the next read. With several replicas a budget can therefore overshoot by the calls of the turns
in flight and by what the other replicas spent since this one last read the rows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from bot.errors import StorageError
from bot.store.usage import Charge, UsageLog, UsageRecord, UsageScope, record_key, scope_key
from bot.usage.budgets import ScopeKeys
from bot.usage.windows import BudgetCalendar, Window

log = structlog.get_logger(__name__)

#: What one scope key spent: the day's tokens and cost, the month's tokens and cost (the
#: order of :attr:`bot.usage.budgets.Limit.index`).
Sums = list[float]
NOTHING: Sums = [0, 0.0, 0, 0.0]
Key = tuple[UsageScope, str]


class SpendLedger:
    """The day's and the month's sums per scope key (see the module doc)."""

    def __init__(
        self,
        log_: UsageLog,
        calendar: BudgetCalendar,
        *,
        scopes: Sequence[UsageScope],
        monthly: bool,
        refresh_s: float,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log_
        self.calendar = calendar
        self.scopes = tuple(scopes)
        self.monthly = monthly
        self.refresh_s = refresh_s
        self._clock = clock
        self._monotonic = monotonic
        self._sums: dict[Key, Sums] = {}  # the table's up to row _last_id, and _own
        self._own: dict[Key, Sums] = {}  # this process's calls committed since that row
        self._last_id = 0
        self._windows: tuple[Window, Window] | None = None
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> tuple[Window, Window]:
        """The day and month windows of now, with the sums read from the table if due (see
        the module doc). A failed read is logged and tried again after ``refresh_s``; the
        sums stay what they were meanwhile."""
        windows = self.calendar.windows(self._clock())
        if not self._due(windows):
            return windows
        async with self._lock:
            windows = self.calendar.windows(self._clock())
            if self._due(windows):
                await self._refresh(windows)
        return windows

    def spent(self, scope: UsageScope, key: str) -> Sums:
        """What ``key`` in ``scope`` spent in the current day and month (its committed
        calls); not to be changed."""
        return self._sums.get((scope, key), NOTHING)

    def add(self, records: Sequence[UsageRecord], keys: ScopeKeys | None = None) -> None:
        """Count ``records``, whose rows were just committed by this process; ``keys``:
        their keys, when they are one turn's (else worked out per record)."""
        if self._windows is None or not self.scopes:
            return  # never read: the first read will find them in the table
        for record in records:
            found = keys or tuple((s, record_key(s, record)) for s in self.scopes)
            tokens, cost = record.usage.total_tokens, record.cost
            self._count(self._sums, found, record.at, tokens, cost)
            self._count(self._own, found, record.at, tokens, cost)

    def _count(
        self, sums: dict[Key, Sums], keys: ScopeKeys, at: float, tokens: int, cost: float | None
    ) -> None:
        assert self._windows is not None
        day, month = self._windows
        if at < month.start:
            return
        for key in keys:
            found = sums.get(key)
            if found is None:
                found = sums[key] = [0, 0.0, 0, 0.0]
            if at >= day.start:
                found[0] += tokens
                found[1] += cost or 0.0
            found[2] += tokens
            found[3] += cost or 0.0

    def _due(self, windows: tuple[Window, Window]) -> bool:
        if self._read_at is None or self._windows is None:
            return True
        if windows[0].start != self._windows[0].start:
            return True
        return self._monotonic() - self._read_at >= self.refresh_s

    async def _refresh(self, windows: tuple[Window, Window]) -> None:
        whole = self._windows is None or windows[0].start != self._windows[0].start
        try:
            if whole:
                await self._read_all(windows)
            else:
                self._add_charges(await self._log.charges_after(self._last_id))
        except StorageError as exc:
            log.warning("budget_sums_unread", error=str(exc))
            if whole:  # a new day counts from nothing rather than from yesterday
                self._sums, self._own, self._windows = {}, {}, windows
        self._read_at = self._monotonic()

    async def _read_all(self, windows: tuple[Window, Window]) -> None:
        day, month = windows
        spending = await self._log.spending(
            self.scopes,
            day_start=day.start,
            month_start=month.start if self.monthly else day.start,
        )
        self._sums = {
            (r.scope, r.key): [r.day_tokens, r.day_cost, r.month_tokens, r.month_cost]
            for r in spending.spent
        }
        self._own = {}
        self._last_id = spending.last_id
        self._windows = windows

    def _add_charges(self, charges: list[Charge]) -> None:
        for key, own in self._own.items():  # the rows read now hold these calls
            sums = self._sums[key]
            for index, value in enumerate(own):
                sums[index] -= value
        for charge in charges:
            keys = tuple(
                (
                    scope,
                    scope_key(
                        scope,
                        channel=charge.channel,
                        conversation_id=charge.conversation_id,
                        user_id=charge.user_id,
                        agent=charge.agent,
                    ),
                )
                for scope in self.scopes
            )
            self._count(self._sums, keys, charge.at, charge.tokens, charge.cost)
            self._last_id = max(self._last_id, charge.id)
        self._own = {}
