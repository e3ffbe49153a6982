"""Parsing (pipeline.md §3): malformed calls are outcomes, never exceptions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.providers.base import ToolCallRequest
from bot.tools.call import ParsedCall
from bot.tools.outcome import OutcomeReason, OutcomeStatus, ToolOutcome
from bot.tools.parsing import normalise_ids, parse_call


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("", {}), ("  ", {}), ('{"a": [1, 2]}', {"a": [1, 2]}), ("{}", {})],
)
def test_objects_parse(raw: str, expected: dict[str, object]) -> None:
    parsed = parse_call(ToolCallRequest(id="x", name="t", arguments=raw), 3)
    assert parsed == ParsedCall(index=3, call_id="x", name="t", arguments=expected)


@pytest.mark.parametrize("raw", ["{", "[1]", '"text"', "null", "42", "{'a': 1}", "[" * 5000])
def test_malformed_arguments_are_not_executed(raw: str) -> None:
    outcome = parse_call(ToolCallRequest(id="x", name="t", arguments=raw), 0)
    assert isinstance(outcome, ToolOutcome)
    assert outcome.status is OutcomeStatus.NOT_EXECUTED and outcome.synthetic
    assert outcome.reason is OutcomeReason.MALFORMED_JSON
    assert outcome.call_id == "x"


def test_missing_and_repeated_ids_get_fresh_unique_ones() -> None:
    requests = [
        ToolCallRequest(id="", name="a", arguments="{}"),
        ToolCallRequest(id="same", name="b", arguments="{}"),
        ToolCallRequest(id="same", name="c", arguments="{}"),
        ToolCallRequest(id="  ", name="d", arguments="{}"),
    ]
    normalised = normalise_ids(requests)
    ids = [r.id for r in normalised]
    assert len(set(ids)) == 4 and all(i.strip() for i in ids)
    assert ids[1] == "same"
    assert [r.name for r in normalised] == ["a", "b", "c", "d"]


@given(st.text(max_size=200), st.text(max_size=20))
def test_parse_call_never_raises(raw: str, name: str) -> None:
    result = parse_call(ToolCallRequest(id="x", name=name, arguments=raw), 0)
    assert isinstance(result, ParsedCall | ToolOutcome)
