"""IANA time zones by name, for the clock tool and schedules.

``ZoneInfo`` reports a name it cannot use in several ways: ``ZoneInfoNotFoundError`` for an
unknown key, ``ValueError`` for a path-like key (``../x``, ``/etc/x``) or a file that is no
zone, and an ``OSError`` where the key names a directory of the tz database (``Europe``:
``IsADirectoryError`` with PyPI's ``tzdata``; the system database answers ``NotFound``).
Every one of them means "no such zone" to a user.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def find_zone(name: str) -> ZoneInfo | None:
    """The zone called ``name``, or ``None`` when there is no usable zone of that name."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None
