"""Cron and one-shot times in IANA zones."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.schedules.job import JobSpec, ScheduleError, StoredTarget
from bot.schedules.recurrence import check_cron, first_run, next_cron_run, parse_time, zone

ORIGIN = StoredTarget(channel="telegram.main", conversation_id="1")


def ts(year: int, month: int, day: int, hour: int, minute: int) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        # 09:00 Berlin is 08:00 UTC in winter and 07:00 UTC in summer (DST on 2030-03-31)
        (ts(2030, 3, 29, 12, 0), ts(2030, 3, 30, 8, 0)),
        (ts(2030, 3, 30, 12, 0), ts(2030, 3, 31, 7, 0)),
        (ts(2030, 10, 26, 12, 0), ts(2030, 10, 27, 8, 0)),
    ],
)
def test_cron_follows_the_zone_across_dst(after: float, expected: float) -> None:
    assert next_cron_run("0 9 * * *", "Europe/Berlin", after) == expected


def test_next_run_is_strictly_after() -> None:
    at_nine = ts(2030, 1, 1, 9, 0)
    assert next_cron_run("0 9 * * *", "UTC", at_nine) == ts(2030, 1, 2, 9, 0)


@pytest.mark.parametrize("expression", ["bad", "* * * *", "61 * * * *", "0 9 * * * * *"])
def test_invalid_cron_is_refused(expression: str) -> None:
    with pytest.raises(ScheduleError, match="cron"):
        check_cron(expression)


@pytest.mark.parametrize("name", ["Mars/Olympus", "Europe", "../../etc/passwd", "zone.tab"])
def test_unknown_zone_is_refused(name: str) -> None:
    with pytest.raises(ScheduleError, match="IANA"):
        zone(name)


@pytest.mark.parametrize(
    ("text", "tz", "expected"),
    [
        ("2030-01-31T09:00:00+01:00", "UTC", ts(2030, 1, 31, 8, 0)),
        ("2030-01-31T09:00", "Europe/Berlin", ts(2030, 1, 31, 8, 0)),
        ("2030-07-01T09:00", "America/New_York", ts(2030, 7, 1, 13, 0)),
    ],
)
def test_one_shot_times(text: str, tz: str, expected: float) -> None:
    assert parse_time(text, tz).timestamp() == expected


def test_one_shot_in_the_past_is_refused() -> None:
    spec = JobSpec(
        prompt="x",
        at=parse_time("2020-01-01T00:00:00+00:00", "UTC"),
        origin=ORIGIN,
        target=ORIGIN,
        creator_id="u",
    )
    with pytest.raises(ScheduleError, match="past"):
        first_run(spec, ts(2030, 1, 1, 0, 0))
