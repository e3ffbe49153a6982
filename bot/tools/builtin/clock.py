"""``current_time``: the current date and time, optionally in an IANA time zone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo

from pydantic import Field

from bot.timezones import find_zone
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec


class CurrentTimeArguments(ToolArguments):
    timezone: str = Field(
        default="",
        max_length=64,
        description="IANA time zone such as 'Europe/Berlin'; UTC when omitted.",
    )


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _zone(name: str) -> tzinfo:
    """The zone called ``name`` (UTC for a blank name)."""
    if not name.strip():
        return UTC
    zone = find_zone(name.strip())
    if zone is None:
        raise ToolFailed(f"unknown time zone {name!r}; use an IANA name")
    return zone


def format_time(moment: datetime) -> str:
    """``2025-01-31T14:05:09+01:00 (Friday, CET)``."""
    zone = moment.tzname() or "UTC"
    return f"{moment.isoformat(timespec='seconds')} ({moment.strftime('%A')}, {zone})"


def current_time_tool(clock: Callable[[], datetime] = _utc_now) -> ToolSpec:
    """The ``current_time`` tool; ``clock`` returns an aware UTC ``datetime``."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(CurrentTimeArguments, arguments)
        return format_time(clock().astimezone(_zone(args.timezone)))

    return ToolSpec(
        name="current_time",
        description="The current date and time (ISO 8601, weekday), in UTC or a given IANA "
        "time zone.",
        parameters=schema_of(CurrentTimeArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
        dedup_exempt=True,
    )
