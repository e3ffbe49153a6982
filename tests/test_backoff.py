"""The one backoff policy: doubling to a cap, jittered into the upper half, reset on success;
and a retry loop's pause, which ends the loop when its task is being cancelled."""

from __future__ import annotations

import asyncio

import pytest

from bot.backoff import Backoff, BackoffPolicy, cancel_requested, sleep_before_retry


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


async def library_call() -> None:
    """A call into a library that turns its task's cancellation into an ordinary error (an
    HTTP client whose connection was closed under it, the MCP SDK's closed stream)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        raise OSError("connection closed") from None


async def test_a_retry_loop_ends_when_its_cancellation_came_back_as_an_error() -> None:
    attempts = 0
    started = asyncio.Event()

    async def retry_loop() -> None:
        nonlocal attempts
        while True:
            attempts += 1
            started.set()
            try:
                await library_call()
            except OSError:
                assert cancel_requested()
                await sleep_before_retry(0.01)

    task = asyncio.create_task(retry_loop())
    await started.wait()
    task.cancel()
    async with asyncio.timeout(30):  # failure guard: the loop used to retry for ever
        with pytest.raises(asyncio.CancelledError):
            await task
    assert attempts == 1


async def test_no_cancel_requested_after_a_timeout_ended() -> None:
    assert not cancel_requested()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await asyncio.sleep(3600)
    assert not cancel_requested()
    await sleep_before_retry(0)  # a plain pause when nothing asked the task to stop
