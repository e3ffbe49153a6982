"""The one backoff policy: doubling to a cap, jittered into the upper half, reset on success."""

from __future__ import annotations

import pytest

from bot.backoff import Backoff, BackoffPolicy


@pytest.mark.parametrize(
    ("retry", "jitter", "expected"),
    [
        (0, 0.0, 0.5),
        (0, 1.0, 1.0),
        (1, 0.5, 1.5),
        (2, 0.0, 2.0),
        (3, 1.0, 8.0),
        (10, 0.0, 4.0),
        (10_000, 1.0, 8.0),
        (-1, 0.0, 0.5),
    ],
)
def test_delay_doubles_to_its_cap_in_the_upper_half(
    retry: int, jitter: float, expected: float
) -> None:
    policy = BackoffPolicy(initial_s=1.0, max_s=8.0)
    assert policy.delay(retry, jitter=jitter) == pytest.approx(expected)


def test_a_loop_counts_its_failures_until_reset() -> None:
    backoff = Backoff(BackoffPolicy(initial_s=0.5, max_s=2.0), jitter=lambda: 1.0)
    assert [backoff.next_delay() for _ in range(4)] == [0.5, 1.0, 2.0, 2.0]
    backoff.reset()
    assert [backoff.next_delay() for _ in range(2)] == [0.5, 1.0]
