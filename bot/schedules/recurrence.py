"""When a job runs: cron expressions and one-shot times, in IANA time zones.

Cron expressions (five fields, ``croniter`` syntax) are evaluated in the job's time zone, so
"0 9 * * *" in ``Europe/Berlin`` is 09:00 Berlin time on both sides of a DST change. One-shot
times are ISO 8601; a time without an offset is read in the job's time zone. Every result is
epoch seconds (UTC), which is what the store and the runner use.

``croniter`` (about 5 ms to import) is imported when a cron expression is first checked or
evaluated, not when the daemon starts: most bots have no cron job.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from bot.schedules.job import JobSpec, ScheduleError
from bot.timezones import find_zone


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; :class:`ScheduleError` when it does not exist."""
    found = find_zone(name)
    if found is None:
        raise ScheduleError(
            f"unknown time zone {name!r}; use an IANA name such as Europe/Berlin or UTC"
        )
    return found


def check_cron(expression: str) -> str:
    """The expression, normalised; :class:`ScheduleError` unless it has five valid fields."""
    from croniter import croniter

    normalised = " ".join(expression.split())
    if len(normalised.split(" ")) != 5 or not croniter.is_valid(normalised):
        raise ScheduleError(
            f"invalid cron expression {expression!r}; use five fields: minute hour day "
            "month weekday (e.g. '0 9 * * 1-5')"
        )
    return normalised


def parse_time(text: str, timezone: str) -> datetime:
    """An ISO 8601 time as an aware datetime (read in ``timezone`` when it has no offset)."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ScheduleError(
            f"invalid time {text!r}; use ISO 8601 such as 2030-01-31T09:00:00+01:00"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone(timezone))
    return parsed


def next_cron_run(expression: str, timezone: str, after: float) -> float:
    """The first occurrence of ``expression`` strictly after ``after`` (epoch seconds)."""
    from croniter import croniter

    start = datetime.fromtimestamp(after, UTC).astimezone(zone(timezone))
    following: datetime = croniter(expression, start).get_next(datetime)
    return following.timestamp()


def next_run(spec: JobSpec, after: float) -> float | None:
    """The job's next run strictly after ``after``; None when a one-shot time has passed."""
    if spec.cron is not None:
        return next_cron_run(spec.cron, spec.timezone, after)
    if spec.at is None:
        raise ScheduleError("a job needs cron or at")
    when = spec.at.timestamp()
    return when if when > after else None


def first_run(spec: JobSpec, now: float) -> float:
    """The first run of a new job; a one-shot time in the past is an error."""
    if spec.cron is None and spec.at is not None and spec.at.timestamp() <= now:
        raise ScheduleError(f"{spec.at.isoformat()} is in the past")
    found = next_run(spec, now)
    assert found is not None
    return found


def describe(epoch: float | None, timezone: str) -> str:
    """``epoch`` as an ISO time in ``timezone`` (or "never")."""
    if epoch is None:
        return "never"
    return (
        datetime.fromtimestamp(epoch, UTC).astimezone(zone(timezone)).isoformat(timespec="minutes")
    )
