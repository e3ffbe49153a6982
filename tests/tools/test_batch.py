"""The batch's verdict only moves towards stopping the turn (pipeline.md §8)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot.tools.batch import Batch, BatchVerdict

Step = Callable[[Batch], None]
ABORT: Step = Batch.abort
LOOP: Step = Batch.stop_for_loop
DONE: Step = Batch.complete_run


@pytest.mark.parametrize(
    ("steps", "verdict"),
    [
        ((), BatchVerdict.CONTINUE),
        ((DONE,), BatchVerdict.COMPLETED_RUN),
        ((LOOP,), BatchVerdict.LOOP_STOPPED),
        ((ABORT,), BatchVerdict.ABORTED),
        ((DONE, LOOP), BatchVerdict.LOOP_STOPPED),
        ((LOOP, DONE), BatchVerdict.LOOP_STOPPED),
        ((ABORT, LOOP, DONE), BatchVerdict.ABORTED),
    ],
)
def test_verdict_precedence(steps: tuple[Step, ...], verdict: BatchVerdict) -> None:
    batch = Batch("", ())
    for step in steps:
        step(batch)
    assert batch.verdict is verdict
    assert batch.aborted is (verdict is BatchVerdict.ABORTED)
