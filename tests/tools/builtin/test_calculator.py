"""``calculator``: arithmetic without eval; every bad expression is a clear ``ToolFailed``."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin.calculator import (
    MAX_INT_DIGITS,
    calculate,
    calculator_tool,
    format_number,
)
from bot.tools.builtin.observation import ToolFailed
from bot.tools.outcome import OutcomeReason, OutcomeStatus
from bot.tools.schema import validator_for
from tests.tools.harness import Harness, make_context

CONTEXT = make_context()

# pieces the property test strings together into mostly well-formed arithmetic
TOKENS = [
    *"0123456789",
    "2.5",
    "1e308",
    "10",
    *"+-*/%(),",
    "//",
    "**",
    "pi",
    "sqrt(",
    "exp(",
    "log(",
    "floor(",
    "round(",
    "max(",
    "asin(",
]


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("7 // 2", 3),
        ("7 % 4", 3),
        ("-2 ** 2", -4),
        ("2 ** -1", 0.5),
        ("sqrt(16) + abs(-2)", 6.0),
        ("max(1, 5, 3)", 5),
        ("round(pi, 2)", 3.14),
        ("floor(2.7) + ceil(2.1)", 5),
        ("10 ** 999 / 10 ** 998", 10),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert math.isclose(calculate(expression), value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "Call is not allowed"),
        ("().__class__.__bases__", "Attribute is not allowed"),
        ("open('x')", "Call is not allowed"),
        ("x + 1", "Name is not allowed"),
        ("'a' * 3", "Constant is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("1 << 2", "operator LShift is not allowed"),
        ("True + 1", "booleans are not numbers"),
        ("sqrt(x=4)", "Call is not allowed"),
        ("1 if 1 else 2", "IfExp is not allowed"),
        ("1 +", "not an arithmetic expression"),
        ("1\x00", "not an arithmetic expression"),
        ("1+" * 120 + "1", "expression too complex"),
        ("1" * 501, "longer than 500 characters"),
        ("2 ** 100000", "exponent larger than 1000"),
        ("9 ** 9 ** 9", "exponent larger than 1000"),
        ("11 ** 999", "more than 1000 digits"),
        ("(10 ** 999) * (10 ** 999) * 10 ** 999", "more than 1000 digits"),
        ("1 / 0", "division by zero"),
        ("7 // 0.0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("exp(1000)", "out of range"),
        ("10.0 ** 400", "out of range"),
        ("10 ** 400 / 3", "out of range"),
        ("sqrt(10 ** 999)", "out of range"),
        ("1e308 * 10", "out of range"),
        ("1e999 - 1e999", "out of range"),
        ("sqrt(-1)", "no real answer (math domain error)"),
        ("log(0)", "no real answer"),
        ("(-8) ** 0.5", "not a real number"),
        ("max()", "wrong function arguments"),
        ("round(1, 2, 3)", "wrong function arguments"),
    ],
)
def test_bad_expressions_fail_saying_why(expression: str, message: str) -> None:
    with pytest.raises(ToolFailed, match=re.escape(message)):
        calculate(expression)


@settings(deadline=None)
@given(st.text(max_size=60) | st.lists(st.sampled_from(TOKENS), max_size=30).map("".join))
def test_any_text_is_a_number_or_a_tool_failure(expression: str) -> None:
    try:
        value = calculate(expression)
    except ToolFailed:
        return
    assert isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(value, int):  # exact, however large, within the digit bound
        assert len(str(abs(value))) <= MAX_INT_DIGITS
    else:
        assert math.isfinite(value)


def test_a_large_power_is_exact() -> None:
    # larger than any float: the answer is the exact integer, not an overflow
    assert calculate("3**700") == 3**700
    assert format_number(calculate("3**700")) == str(3**700)


async def test_handler_formats_whole_floats_as_integers() -> None:
    spec = calculator_tool()
    assert spec.handler is not None
    assert await spec.handler({"expression": "10 / 2"}, CONTEXT) == "5"
    assert await spec.handler({"expression": "1 / 4"}, CONTEXT) == "0.25"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "expression: Field required"),
        ({"expression": 5}, "expression: Input should be a valid string"),
        ({"expression": ""}, "expression: String should have at least 1 character"),
        ({"expression": "1", "precision": 2}, "precision: Extra inputs are not permitted"),
    ],
)
async def test_handler_refuses_bad_arguments_called_directly(
    arguments: dict[str, object], message: str
) -> None:
    spec = calculator_tool()
    assert spec.handler is not None
    with pytest.raises(ToolFailed, match=f"invalid arguments: {message}"):
        await spec.handler(arguments, CONTEXT)


def test_schema_bounds_the_expression() -> None:
    check = validator_for(calculator_tool().parameters)
    assert check.problem({"expression": "1 + 1"}) is None
    for bad in ({}, {"expression": ""}, {"expression": "1" * 501}, {"expr": "1"}):
        assert check.problem(bad) is not None, bad


def call(arguments: object, call_id: str = "c1") -> ToolCallRequest:
    return ToolCallRequest(id=call_id, name="calculator", arguments=json.dumps(arguments))


@pytest.mark.parametrize(
    "arguments",
    [{}, {"expression": 5}, {"expression": ""}, {"expression": "1" * 501}, {"expr": "1 + 1"}],
)
async def test_invalid_arguments_are_a_synthetic_outcome(
    store: Store, arguments: dict[str, object]
) -> None:
    report = await Harness(store, [calculator_tool()]).run(call(arguments))
    (outcome,) = report.outcomes
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert outcome.reason is OutcomeReason.BAD_ARGUMENTS
    assert "calculator" in outcome.observation


@pytest.mark.parametrize(
    ("expression", "observation"),
    [
        ("6 * 7", "42"),
        ("1 / 0", "ToolFailed: division by zero"),
        ("2 ** 5000", "ToolFailed: exponent larger than 1000"),
        ("exp(1000)", "ToolFailed: the result is out of range (too large for a float)"),
        ("max()", "ToolFailed: wrong function arguments (max expected at least 1 argument, got 0)"),
    ],
)
async def test_results_and_failures_through_the_pipeline(
    store: Store, expression: str, observation: str
) -> None:
    report = await Harness(store, [calculator_tool()]).run(call({"expression": expression}))
    (outcome,) = report.outcomes
    assert outcome.status is OutcomeStatus.EXECUTED
    assert outcome.observation == observation
    assert outcome.failed is observation.startswith("ToolFailed")
