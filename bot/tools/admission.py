"""Turn admission: at most a fixed number of tool calls per turn.

Calls past the limit keep their result slot and get a retryable "batch full" outcome.
"""

from __future__ import annotations

MAX_CALLS_PER_TURN = 64


class TurnAdmission:
    """Counts the calls of one turn. Not shared between turns."""

    __slots__ = ("_admitted", "limit")

    def __init__(self, limit: int = MAX_CALLS_PER_TURN) -> None:
        self.limit = limit
        self._admitted = 0

    def admit(self) -> bool:
        """Take one place; ``False`` once the turn's limit is reached."""
        if self._admitted >= self.limit:
            return False
        self._admitted += 1
        return True

    @property
    def admitted(self) -> int:
        return self._admitted
