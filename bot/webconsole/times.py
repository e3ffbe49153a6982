"""One time format for every page: an absolute time in the console's zone with the relative
time beside it, ``2026-12-01 10:05:00 UTC (3 min ago)``.

The zone is ``web.time_zone`` (an IANA name, ``UTC`` by default). Each page request sets
the format in force (:func:`using`, from :class:`bot.webconsole.pages.Pages`), with the
request's time as "now", so that every time on one page is relative to the same instant;
:func:`current` is what the display helpers read. The live pages' script writes its "updated"
stamp in the same shape, in the same zone (``data-zone`` and ``data-offset`` on the page).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from bot.timezones import find_zone

ABSOLUTE = "%Y-%m-%d %H:%M:%S"


def relative(seconds: float) -> str:
    """``3 min ago`` for a past moment (``seconds`` before now), ``in 2 h 5 min`` for one to
    come; ``just now`` within a second."""
    ahead = seconds < 0
    s = abs(round(seconds))
    if s < 1:
        return "just now"
    if s < 60:
        amount = f"{s} s"
    elif s < 3600:
        amount = f"{s // 60} min"
    elif s < 86400:
        amount = f"{s // 3600} h {s % 3600 // 60} min"
    else:
        amount = f"{s // 86400} d {s % 86400 // 3600} h"
    return f"in {amount}" if ahead else f"{amount} ago"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeFormat:
    """Times in ``zone`` relative to ``now``."""

    zone: tzinfo
    zone_name: str
    now: float

    def absolute(self, ts: float) -> str:
        stamp = datetime.fromtimestamp(ts, self.zone)
        return f"{stamp.strftime(ABSOLUTE)} {self.zone_name}"

    def when(self, ts: float) -> str:
        return f"{self.absolute(ts)} ({relative(self.now - ts)})"

    def offset_s(self) -> int:
        """The zone's offset from UTC now, in seconds (for the live pages' script)."""
        delta = datetime.fromtimestamp(self.now, self.zone).utcoffset()
        return 0 if delta is None else int(delta.total_seconds())


def time_format(zone_name: str, now: float | None = None) -> TimeFormat:
    """The format for ``zone_name`` (an unknown name reads as UTC: the settings check it)."""
    zone = find_zone(zone_name) if zone_name != "UTC" else None
    return TimeFormat(
        zone=zone or UTC,
        zone_name=zone_name if zone is not None else "UTC",
        now=time.time() if now is None else now,
    )


_CURRENT: contextvars.ContextVar[TimeFormat | None] = contextvars.ContextVar(
    "console_time_format", default=None
)


def current() -> TimeFormat:
    """The format of the page being rendered (UTC, now, outside a page)."""
    found = _CURRENT.get()
    return found if found is not None else time_format("UTC")


@contextmanager
def using(fmt: TimeFormat) -> Iterator[TimeFormat]:
    """Render with ``fmt`` until the block ends."""
    token = _CURRENT.set(fmt)
    try:
        yield fmt
    finally:
        _CURRENT.reset(token)
