"""Budget windows: the day and the month a moment falls in, in the budgets' time zone.

A day runs from one local midnight to the next, a month from the 1st at 00:00 to the next
1st; daylight saving time makes a day 23 or 25 hours long, never moves its midnight. The
windows are worked out once and kept until the day ends, so asking costs a comparison.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.timezones import find_zone


class Period(enum.StrEnum):
    DAY = "day"
    MONTH = "month"

    @property
    def adjective(self) -> str:
        return "daily" if self is Period.DAY else "monthly"


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """One day or month: ``start`` and ``end`` in epoch seconds; ``resets`` when it ends,
    as the budget notice words it (``at 00:00 Europe/Berlin``, ``on 1 March at 00:00 UTC``)."""

    period: Period
    start: float
    end: float
    resets: str


class BudgetCalendar:
    """The day and month windows in one time zone (an IANA name, already validated)."""

    def __init__(self, zone_name: str) -> None:
        zone = find_zone(zone_name)
        if zone is None:
            raise ValueError(f"unknown time zone {zone_name!r}")
        self.zone_name = zone_name
        self._zone: ZoneInfo = zone
        self._current: tuple[Window, Window] | None = None

    def windows(self, now: float) -> tuple[Window, Window]:
        """The day and the month ``now`` falls in."""
        current = self._current
        if current is not None and current[0].start <= now < current[0].end:
            return current
        current = self._current = self._work_out(now)
        return current

    def _work_out(self, now: float) -> tuple[Window, Window]:
        today = datetime.fromtimestamp(now, self._zone).date()
        first = today.replace(day=1)
        next_month = (first + timedelta(days=32)).replace(day=1)
        day = Window(
            period=Period.DAY,
            start=self._midnight(today),
            end=self._midnight(today + timedelta(days=1)),
            resets=f"at 00:00 {self.zone_name}",
        )
        month = Window(
            period=Period.MONTH,
            start=self._midnight(first),
            end=self._midnight(next_month),
            resets=f"on {next_month.day} {next_month.strftime('%B')} at 00:00 {self.zone_name}",
        )
        return day, month

    def _midnight(self, day: date) -> float:
        return datetime(day.year, day.month, day.day, tzinfo=self._zone).timestamp()
