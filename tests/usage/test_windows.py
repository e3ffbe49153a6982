"""Budget windows in a time zone: local midnights and the 1st of the month, across daylight
saving time and the turn of the year, and how the notice words the reset."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from bot.usage.windows import BudgetCalendar, Period

BERLIN = ZoneInfo("Europe/Berlin")


def at(zone: ZoneInfo, *parts: int) -> float:
    return datetime(*parts, tzinfo=zone).timestamp()  # type: ignore[misc]


def test_day_and_month_of_a_moment_in_berlin() -> None:
    day, month = BudgetCalendar("Europe/Berlin").windows(at(BERLIN, 2026, 12, 1, 21, 30))
    assert (day.period, month.period) == (Period.DAY, Period.MONTH)
    assert day.start == at(BERLIN, 2026, 12, 1)
    assert day.end == at(BERLIN, 2026, 12, 2)
    assert month.start == at(BERLIN, 2026, 12, 1)
    assert month.end == at(BERLIN, 2027, 1, 1)
    assert day.resets == "at 00:00 Europe/Berlin"
    assert month.resets == "on 1 January at 00:00 Europe/Berlin"


@pytest.mark.parametrize(
    ("moment", "hours"),
    [((2026, 3, 29, 12), 23), ((2026, 10, 25, 12), 25), ((2026, 7, 1, 12), 24)],
)
def test_daylight_saving_days_keep_their_midnights(
    moment: tuple[int, int, int, int], hours: int
) -> None:
    day, _ = BudgetCalendar("Europe/Berlin").windows(at(BERLIN, *moment))
    assert (day.end - day.start) / 3600 == hours
    assert datetime.fromtimestamp(day.start, BERLIN).hour == 0
    assert datetime.fromtimestamp(day.end, BERLIN).hour == 0


def test_a_utc_evening_is_the_next_day_in_tokyo() -> None:
    moment = datetime(2026, 12, 31, 20, 0, tzinfo=UTC).timestamp()
    tokyo = ZoneInfo("Asia/Tokyo")
    day, month = BudgetCalendar("Asia/Tokyo").windows(moment)
    assert day.start == at(tokyo, 2027, 1, 1)
    assert month.start == at(tokyo, 2027, 1, 1)
    assert month.resets == "on 1 February at 00:00 Asia/Tokyo"
    utc_day, _ = BudgetCalendar("UTC").windows(moment)
    assert utc_day.start == datetime(2026, 12, 31, tzinfo=UTC).timestamp()


def test_windows_move_on_when_the_day_ends() -> None:
    calendar = BudgetCalendar("Europe/Berlin")
    first, _ = calendar.windows(at(BERLIN, 2026, 12, 1, 23, 59))
    again, _ = calendar.windows(at(BERLIN, 2026, 12, 1, 0, 0))
    following, month = calendar.windows(at(BERLIN, 2026, 12, 2, 0, 0))
    assert first == again
    assert following.start == first.end
    assert month.start == at(BERLIN, 2026, 12, 1)


def test_an_unknown_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"):
        BudgetCalendar("Mars/Olympus")
