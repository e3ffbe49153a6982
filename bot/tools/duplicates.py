"""The duplicate guard and the repeated-prompt guard of one turn.

Within one iteration an identical (name, canonical arguments) call is skipped unless the
tool is dedup-exempt. Across iterations, a prompt-requiring call that was already refused
(denied, timed out, auto-denied) must not prompt again: it aborts the turn instead.
"""

from __future__ import annotations


class DuplicateGuard:
    """Per-turn memory of call keys. Not shared between turns."""

    __slots__ = ("_iteration", "_refused")

    def __init__(self) -> None:
        self._iteration: set[tuple[str, str]] = set()
        self._refused: set[tuple[str, str]] = set()

    def new_iteration(self) -> None:
        self._iteration.clear()

    def seen(self, key: tuple[str, str]) -> bool:
        """Whether ``key`` already ran (or was prepared) in this iteration; remembers it."""
        if key in self._iteration:
            return True
        self._iteration.add(key)
        return False

    def refused_before(self, key: tuple[str, str]) -> bool:
        return key in self._refused

    def remember_refusal(self, key: tuple[str, str]) -> None:
        self._refused.add(key)
