"""``current_time``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin.clock import current_time_tool
from bot.tools.builtin.observation import ToolFailed
from bot.tools.outcome import OutcomeReason, OutcomeStatus
from bot.tools.schema import validator_for
from tests.tools.harness import Harness, make_context

CONTEXT = make_context()
MOMENT = datetime(2025, 1, 31, 13, 5, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "2025-01-31T13:05:09+00:00 (Friday, UTC)"),
        ({"timezone": "Europe/Berlin"}, "2025-01-31T14:05:09+01:00 (Friday, CET)"),
        ({"timezone": "Asia/Tokyo"}, "2025-01-31T22:05:09+09:00 (Friday, JST)"),
        ({"timezone": " Asia/Tokyo "}, "2025-01-31T22:05:09+09:00 (Friday, JST)"),
        ({"timezone": " "}, "2025-01-31T13:05:09+00:00 (Friday, UTC)"),
    ],
)
async def test_current_time(arguments: dict[str, object], expected: str) -> None:
    spec = current_time_tool(lambda: MOMENT)
    assert spec.handler is not None
    assert await spec.handler(arguments, CONTEXT) == expected


@pytest.mark.parametrize(
    "zone",
    ["Mars/Olympus", "../../etc/passwd", "/etc/passwd", "Not A Zone", "Europe", "zone.tab"],
)
async def test_unknown_zone_fails_naming_it(zone: str) -> None:
    spec = current_time_tool(lambda: MOMENT)
    assert spec.handler is not None
    with pytest.raises(
        ToolFailed, match=re.escape(f"unknown time zone '{zone}'; use an IANA name")
    ):
        await spec.handler({"timezone": zone}, CONTEXT)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"timezone": 5}, "timezone: Input should be a valid string"),
        ({"timezone": None}, "timezone: Input should be a valid string"),
        ({"tz": "UTC"}, "tz: Extra inputs are not permitted"),
    ],
)
async def test_handler_refuses_bad_arguments_called_directly(
    arguments: dict[str, object], message: str
) -> None:
    spec = current_time_tool(lambda: MOMENT)
    assert spec.handler is not None
    with pytest.raises(ToolFailed, match=f"invalid arguments: {message}"):
        await spec.handler(arguments, CONTEXT)


def test_spec_is_harmless_and_schema_valid() -> None:
    spec = current_time_tool()
    assert not spec.requires_approval and spec.concurrency_safe
    check = validator_for(spec.parameters)
    assert check.problem({}) is None
    assert check.problem({"timezone": "UTC"}) is None
    assert check.problem({"tz": "UTC"}) is not None
    assert check.problem({"timezone": "x" * 65}) is not None


def call(arguments: object) -> ToolCallRequest:
    return ToolCallRequest(id="c1", name="current_time", arguments=json.dumps(arguments))


@pytest.mark.parametrize("arguments", [{"timezone": 5}, {"tz": "UTC"}, {"timezone": "x" * 65}])
async def test_invalid_arguments_are_a_synthetic_outcome(
    store: Store, arguments: dict[str, object]
) -> None:
    harness = Harness(store, [current_time_tool(lambda: MOMENT)])
    (outcome,) = (await harness.run(call(arguments))).outcomes
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert outcome.reason is OutcomeReason.BAD_ARGUMENTS
    assert "current_time" in outcome.observation


async def test_unknown_zone_is_a_failed_result_through_the_pipeline(store: Store) -> None:
    harness = Harness(store, [current_time_tool(lambda: MOMENT)])
    (outcome,) = (await harness.run(call({"timezone": "Mars/Olympus"}))).outcomes
    assert outcome.status is OutcomeStatus.EXECUTED and outcome.failed
    assert outcome.observation == "ToolFailed: unknown time zone 'Mars/Olympus'; use an IANA name"
