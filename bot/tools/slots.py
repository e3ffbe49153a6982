"""Result slots: one per original call of a batch, in the model's order.

Preparation fills the slots of calls that never run; execution fills the rest. A slot is
filled exactly once, so no call is ever reported twice. Slots also remember which calls were
launched, so that an interrupted call can be reported "before launch" truthfully.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.providers.base import ToolCallRequest
from bot.tools.outcome import ToolOutcome


class SlotAlreadyFilled(RuntimeError):
    """A broken invariant: a call's result was reported twice."""


class ResultSlots:
    __slots__ = ("_launched", "_outcomes", "requests")

    def __init__(self, requests: Sequence[ToolCallRequest]) -> None:
        self.requests = tuple(requests)
        self._outcomes: list[ToolOutcome | None] = [None] * len(self.requests)
        self._launched: set[int] = set()

    def fill(self, index: int, outcome: ToolOutcome) -> None:
        if self._outcomes[index] is not None:
            raise SlotAlreadyFilled(f"slot {index} ({self.requests[index].id}) filled twice")
        self._outcomes[index] = outcome

    def mark_launched(self, index: int) -> None:
        self._launched.add(index)

    def launched(self, index: int) -> bool:
        return index in self._launched

    def open_indexes(self) -> list[int]:
        return [i for i, o in enumerate(self._outcomes) if o is None]

    def filled(self) -> dict[int, ToolOutcome]:
        """The outcomes known so far, by index."""
        return {i: o for i, o in enumerate(self._outcomes) if o is not None}

    def outcomes(self) -> list[ToolOutcome]:
        """Every outcome in the model's order; raises if a slot is still open."""
        missing = self.open_indexes()
        if missing:
            raise RuntimeError(f"result slots {missing} are still open")
        return [o for o in self._outcomes if o is not None]
