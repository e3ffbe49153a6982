"""``current_time``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.tools.builtin.clock import current_time_tool
from bot.tools.schema import validator_for
from bot.tools.spec import ToolContext

CONTEXT = ToolContext(session_key="s", channel="console.main", conversation_id="c", requester="u")
MOMENT = datetime(2025, 1, 31, 13, 5, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "2025-01-31T13:05:09+00:00 (Friday, UTC)"),
        ({"timezone": "Europe/Berlin"}, "2025-01-31T14:05:09+01:00 (Friday, CET)"),
        ({"timezone": "Asia/Tokyo"}, "2025-01-31T22:05:09+09:00 (Friday, JST)"),
        ({"timezone": " "}, "2025-01-31T13:05:09+00:00 (Friday, UTC)"),
    ],
)
async def test_current_time(arguments: dict[str, object], expected: str) -> None:
    spec = current_time_tool(lambda: MOMENT)
    assert spec.handler is not None
    assert await spec.handler(arguments, CONTEXT) == expected


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "Not A Zone"])
async def test_unknown_zone_is_an_error_naming_it(zone: str) -> None:
    spec = current_time_tool(lambda: MOMENT)
    assert spec.handler is not None
    with pytest.raises(ValueError, match="unknown time zone"):
        await spec.handler({"timezone": zone}, CONTEXT)


def test_spec_is_harmless_and_schema_valid() -> None:
    spec = current_time_tool()
    assert not spec.requires_approval and spec.concurrency_safe
    assert validator_for(spec.parameters).problem({"timezone": "UTC"}) is None
    assert validator_for(spec.parameters).problem({"tz": "UTC"}) is not None
