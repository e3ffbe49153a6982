"""``[pricing]`` arithmetic: per million tokens of each kind, exact names before patterns
(the longest first), cache prices defaulting to the input price, unknown models unpriced."""

from __future__ import annotations

import pytest

from bot.config import ModelPrice
from bot.providers.base import Usage
from bot.usage.pricing import PriceTable

PRICES = {
    "gpt-4o": ModelPrice(input=2.5, output=10.0, cache_read=1.25),
    "gpt-4o-mini*": ModelPrice(input=0.15, output=0.6),
    "gpt-4o*": ModelPrice(input=5.0, output=15.0),
    "claude-sonnet-4-*": ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.3),
}
CALL = Usage(
    input_tokens=1_000_000,
    output_tokens=200_000,
    cache_write_tokens=100_000,
    cache_read_tokens=400_000,
)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        # exact: cache writes at the input price (unset), reads at their own
        ("gpt-4o", 2.5 + 0.2 * 10.0 + 0.1 * 2.5 + 0.4 * 1.25),
        # the longer pattern wins over "gpt-4o*"; both cache kinds at the input price
        ("gpt-4o-mini-2024-07-18", 0.15 + 0.2 * 0.6 + 0.5 * 0.15),
        ("gpt-4o-2024-08-06", 5.0 + 0.2 * 15.0 + 0.5 * 5.0),
        ("claude-sonnet-4-20250514", 3.0 + 0.2 * 15.0 + 0.1 * 3.75 + 0.4 * 0.3),
    ],
)
def test_cost_per_million_tokens_of_each_kind(model: str, expected: float) -> None:
    assert PriceTable(PRICES).cost(model, CALL) == pytest.approx(expected)


def test_unknown_models_count_tokens_only() -> None:
    table = PriceTable(PRICES)
    assert table.cost("llama3.1:8b", CALL) is None
    assert table.cost("GPT-4O", CALL) is None  # names are compared as written
    assert PriceTable({}).cost("gpt-4o", CALL) is None


def test_small_calls_cost_fractions() -> None:
    one_call = Usage(input_tokens=1200, output_tokens=300)
    assert PriceTable(PRICES).cost("gpt-4o", one_call) == pytest.approx(0.006)
    assert PriceTable(PRICES).cost("gpt-4o", Usage()) == 0.0


def test_many_model_names_keep_the_memo_bounded() -> None:
    table = PriceTable(PRICES)
    for n in range(3000):
        assert table.cost(f"server-model-{n}", CALL) is None
    assert table.cost("gpt-4o", Usage(output_tokens=1_000_000)) == pytest.approx(10.0)
