"""DraftStream: what the user sees stays a coherent prefix across retried attempts."""

from __future__ import annotations

import pytest

from bot.providers.draft_stream import DraftStream
from tests.providers.recorders import SinkRecorder


@pytest.mark.parametrize(
    ("attempts", "shown"),
    [
        ([["Hel", "lo"]], "Hello"),
        ([["Hel"], ["He", "llo", " world"]], "Hello world"),
        ([["Hello wo"], ["Hello"]], "Hello wo"),
        ([["Hello"], ["Howdy", " there"]], "Hello"),
        ([["Hello"], ["Hel", "p!"]], "Hello"),
        ([["A"], ["AB"], ["ABC"]], "ABC"),
    ],
)
async def test_retried_attempts_only_extend_what_was_shown(
    attempts: list[list[str]], shown: str, sink: SinkRecorder
) -> None:
    draft = DraftStream(sink)
    for deltas in attempts:
        write = draft.attempt()
        for delta in deltas:
            await write(delta)
    assert sink.text == shown
