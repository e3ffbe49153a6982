"""What each budget's scope has spent in the current day and month, kept in memory.

The sums come from the ``usage`` table (:meth:`bot.store.usage.UsageLog.spending`, one query
for every scope a budget counts in), so they survive a restart. After that the ledger adds
the calls this process records as their rows are committed (:meth:`SpendLedger.add`), and
reads the table again every ``refresh_s`` seconds, when the day changes, and at the first
check: what other replicas spent reaches it within ``refresh_s``. A budget check is then a
few dictionary lookups, with no trip to the database.

With several replicas a budget can therefore overshoot by the calls of the turns in flight
and by what the other replicas spent since this one last read the sums.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import structlog

from bot.errors import StorageError
from bot.store.usage import UsageLog, UsageRecord, UsageScope, record_key
from bot.usage.budgets import ScopeKeys
from bot.usage.windows import BudgetCalendar, Window

log = structlog.get_logger(__name__)

#: What one scope key spent: the day's tokens and cost, the month's tokens and cost (the
#: order of :attr:`bot.usage.budgets.Limit.index`).
Sums = list[float]
NOTHING: Sums = [0, 0.0, 0, 0.0]


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
        self._sums: dict[tuple[UsageScope, str], Sums] = {}
        self._windows: tuple[Window, Window] | None = None
        self._read_at: float | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> tuple[Window, Window]:
        """The day and month windows of now, with sums read from the table if they are due
        (see the module doc). A failed read is logged and tried again at the next check;
        the sums stay what they were meanwhile."""
        windows = self.calendar.windows(self._clock())
        if not self._due(windows):
            return windows
        async with self._lock:
            windows = self.calendar.windows(self._clock())
            if self._due(windows):
                await self._read(windows)
        return windows

    def spent(self, scope: UsageScope, key: str) -> Sums:
        """What ``key`` in ``scope`` spent in the current day and month (its committed
        calls); not to be changed."""
        return self._sums.get((scope, key), NOTHING)

    def add(self, records: Sequence[UsageRecord], keys: ScopeKeys | None = None) -> None:
        """Count ``records``, whose rows were just committed by this process; ``keys``:
        their keys, when they are one turn's (else worked out per record)."""
        windows = self._windows
        if windows is None or not self.scopes:
            return  # never read: the first read will find them in the table
        day_start, month_start = windows[0].start, windows[1].start
        sums = self._sums
        for record in records:
            tokens, cost, at = record.usage.total_tokens, record.cost or 0.0, record.at
            if at < month_start:
                continue
            for scope, key in keys or [(s, record_key(s, record)) for s in self.scopes]:
                found = sums.get((scope, key))
                if found is None:
                    found = sums[(scope, key)] = [0, 0.0, 0, 0.0]
                if at >= day_start:
                    found[0] += tokens
                    found[1] += cost
                found[2] += tokens
                found[3] += cost

    def _due(self, windows: tuple[Window, Window]) -> bool:
        if self._read_at is None or self._windows is None:
            return True
        if windows[0].start != self._windows[0].start:
            return True
        return self._monotonic() - self._read_at >= self.refresh_s

    async def _read(self, windows: tuple[Window, Window]) -> None:
        day, month = windows
        try:
            rows = await self._log.spending(
                self.scopes,
                day_start=day.start,
                month_start=month.start if self.monthly else day.start,
            )
        except StorageError as exc:
            log.warning("budget_sums_unread", error=str(exc))
            if self._windows is None or self._windows[0].start != day.start:
                self._sums, self._windows = {}, windows
            self._read_at = self._monotonic()  # not every turn: again after refresh_s
            return
        self._sums = {
            (r.scope, r.key): [r.day_tokens, r.day_cost, r.month_tokens, r.month_cost] for r in rows
        }
        self._windows = windows
        self._read_at = self._monotonic()
