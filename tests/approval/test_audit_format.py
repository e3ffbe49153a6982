"""Audit export formats and ``--since`` parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.approval.audit import parse_since

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90m", NOW - 5400),
        ("24h", NOW - 86400),
        ("7d", NOW - 7 * 86400),
        ("30s", NOW - 30),
        ("2025-05-31T12:00:00", NOW - 86400),
        ("2025-05-31T14:00:00+02:00", NOW - 86400),
    ],
)
def test_parse_since(text: str, expected: float) -> None:
    assert parse_since(text, NOW) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "5 parsecs", ""])
def test_parse_since_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_since(text, NOW)
