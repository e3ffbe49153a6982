"""``unless_cancelled``: work raced against the turn's cancel token in the calling task,
nesting with ``asyncio.timeout``, other cancellations and itself."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent.turn import CancelToken
from bot.tools.cancellation import unless_cancelled


class Work:
    """A coroutine factory that waits until released and records what it saw."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.saw_cancel = False
        self.swallow = False

    async def run(self) -> str:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.saw_cancel = True
            if not self.swallow:
                raise
            return "finished anyway"
        return "done"


async def test_returns_the_result_when_the_token_stays_quiet() -> None:
    work = Work()
    work.release.set()
    assert await unless_cancelled(work.run(), CancelToken()) == "done"
    assert not work.saw_cancel


async def test_the_token_cancels_the_work_and_gives_none() -> None:
    work, token = Work(), CancelToken()
    task = asyncio.create_task(unless_cancelled(work.run(), token))
    await work.started.wait()
    token.cancel()
    assert await task is None
    assert work.saw_cancel
    assert task.cancelling() == 0


async def test_an_already_cancelled_token_never_starts_the_work() -> None:
    work, token = Work(), CancelToken()
    token.cancel()
    assert await unless_cancelled(work.run(), token) is None
    assert not work.started.is_set()


async def test_work_that_finishes_despite_the_cancel_keeps_its_result() -> None:
    work, token = Work(), CancelToken()
    work.swallow = True
    task = asyncio.create_task(unless_cancelled(work.run(), token))
    await work.started.wait()
    token.cancel()
    assert await task == "finished anyway"
    assert task.cancelling() == 0


async def test_errors_of_the_work_propagate() -> None:
    async def failing() -> str:
        raise ValueError("broken")

    with pytest.raises(ValueError, match="broken"):
        await unless_cancelled(failing(), CancelToken())


async def test_a_cancelled_caller_is_not_mistaken_for_the_token() -> None:
    work, token = Work(), CancelToken()
    task = asyncio.create_task(unless_cancelled(work.run(), token))
    await work.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert work.saw_cancel


async def test_the_token_and_the_caller_cancelled_together_propagates() -> None:
    work, token = Work(), CancelToken()
    task = asyncio.create_task(unless_cancelled(work.run(), token))
    await work.started.wait()
    token.cancel()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_enclosing_timeout_still_expires_as_a_timeout() -> None:
    work = Work()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0):
            await unless_cancelled(work.run(), CancelToken())
    assert work.saw_cancel


async def test_after_a_token_cancel_an_enclosing_timeout_still_works() -> None:
    """The cancellation the token caused is taken back: a later timeout in the same task
    is not confused by it."""

    async def turn(token: CancelToken, first: Work) -> str:
        assert await unless_cancelled(first.run(), token) is None
        try:
            async with asyncio.timeout(0):
                await asyncio.Event().wait()
        except TimeoutError:
            return "timed out"
        return "not reached"

    work, token = Work(), CancelToken()
    task = asyncio.create_task(turn(token, work))
    await work.started.wait()
    token.cancel()
    assert await task == "timed out"


async def test_callbacks_registered_after_cancel_run_at_once() -> None:
    token = CancelToken()
    token.cancel("shutdown")
    called: list[str] = []
    token.on_cancel(lambda: called.append(token.reason))
    assert called == ["shutdown"]


async def test_work_that_sets_the_token_itself_and_returns_keeps_its_result() -> None:
    """A tool that stops its own turn: the task is not left cancelled once the work is done,
    so what the caller awaits next is not cancelled instead."""
    token = CancelToken()

    async def stops_its_turn() -> str:
        token.cancel()
        return "stopped the turn"

    assert await unless_cancelled(stops_its_turn(), token) == "stopped the turn"
    await asyncio.sleep(0)  # would raise CancelledError if the task were still cancelled
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0


async def test_work_that_sets_the_token_itself_is_cancelled_where_it_waits_next() -> None:
    work, token = Work(), CancelToken()

    async def stops_then_waits() -> str:
        token.cancel()
        return await work.run()

    assert await unless_cancelled(stops_then_waits(), token) is None
    assert work.saw_cancel


async def test_nested_scopes_of_one_token_end_in_the_outer_one() -> None:
    """A tool call (outer) whose retry backoff (inner) waits on the same token: the inner
    scope lets the cancellation through, the outer one takes it back."""
    work, token = Work(), CancelToken()
    inner_raised: list[bool] = []

    async def outer() -> str:
        try:
            await unless_cancelled(work.run(), token)
        except asyncio.CancelledError:
            inner_raised.append(True)
            raise
        return "not reached"

    task = asyncio.create_task(unless_cancelled(outer(), token))
    await work.started.wait()
    token.cancel()
    assert await task is None
    assert inner_raised == [True]
    assert task.cancelling() == 0
