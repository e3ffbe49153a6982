"""``current_time``: the current date and time, optionally in an IANA time zone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.tools.spec import ToolContext, ToolHandler, ToolKind, ToolSpec

PARAMETERS: Mapping[str, object] = {
    "type": "object",
    "properties": {
        "timezone": {
            "type": "string",
            "description": "IANA time zone such as 'Europe/Berlin'; UTC when omitted.",
            "maxLength": 64,
        }
    },
    "additionalProperties": False,
}


def _utc_now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """``2025-01-31T14:05:09+01:00 (Friday, CET)``."""
    zone = moment.tzname() or "UTC"
    return f"{moment.isoformat(timespec='seconds')} ({moment.strftime('%A')}, {zone})"


def current_time_tool(clock: Callable[[], datetime] = _utc_now) -> ToolSpec:
    """The ``current_time`` tool; ``clock`` returns an aware UTC ``datetime``."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> str:
        name = arguments.get("timezone")
        now = clock()
        if not isinstance(name, str) or not name.strip():
            return format_time(now.astimezone(UTC))
        try:
            zone = ZoneInfo(name.strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {name!r}; use an IANA name") from None
        return format_time(now.astimezone(zone))

    typed: ToolHandler = handler
    return ToolSpec(
        name="current_time",
        description="The current date and time (ISO 8601, weekday), in UTC or a given IANA "
        "time zone.",
        parameters=PARAMETERS,
        handler=typed,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        retry_safe=True,
        dedup_exempt=True,
    )
