"""Loop detection: the same successful call returning the same result again and again.

At 3 repeats in one turn the model is warned; at 5 the turn stops.
"""

from __future__ import annotations

import enum
import hashlib

WARN_AT = 3
STOP_AT = 5

LOOP_WARNING = (
    "\n\n[runtime note: this exact call has now returned the same result {count} times in this "
    "turn. Do not call it again; use the result you have or try something different.]"
)


class Repetition(enum.StrEnum):
    NONE = "none"
    WARN = "warn"
    STOP = "stop"


class LoopDetector:
    """Per-turn counts of (call key, result digest)."""

    __slots__ = ("_counts", "stop_at", "warn_at")

    def __init__(self, *, warn_at: int = WARN_AT, stop_at: int = STOP_AT) -> None:
        self.warn_at = warn_at
        self.stop_at = stop_at
        self._counts: dict[tuple[str, str, str], int] = {}

    def observe(self, key: tuple[str, str], result: str) -> tuple[Repetition, int]:
        """Count one successful call; returns the verdict and the count so far."""
        digest = hashlib.blake2b(result.encode("utf-8", "surrogatepass"), digest_size=16)
        entry = (key[0], key[1], digest.hexdigest())
        count = self._counts.get(entry, 0) + 1
        self._counts[entry] = count
        if count >= self.stop_at:
            return Repetition.STOP, count
        if count >= self.warn_at:
            return Repetition.WARN, count
        return Repetition.NONE, count
