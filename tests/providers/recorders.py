"""Test doubles that record what providers hand them (sleeps, stream deltas)."""

from __future__ import annotations

TEST_KEY = "sk-test-0123456789abcdef"


class RecordedSleep:
    """A ``sleep`` that records each requested wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class SinkRecorder:
    """A StreamSink that records every delta."""

    def __init__(self) -> None:
        self.deltas: list[str] = []

    async def __call__(self, delta: str) -> None:
        self.deltas.append(delta)

    @property
    def text(self) -> str:
        return "".join(self.deltas)
