"""What a model call costs, from ``[pricing."<model>"]`` (see :mod:`bot.config.usage`).

A model is found by the name its reply gives: an exact key first, then the keys that are
shell-style patterns, the longest first (``"gpt-4o-mini*"`` before ``"gpt-4o*"``). Lookups
are remembered per model name, so a call pays one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase

from bot.config import ModelPrice
from bot.providers.base import Usage

PER_TOKENS = 1_000_000
_PATTERN_CHARS = frozenset("*?[")


class PriceTable:
    """``[pricing]`` as a lookup: :meth:`cost` of a call, ``None`` for a model with no
    price."""

    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self._exact = {name: p for name, p in prices.items() if not _PATTERN_CHARS & set(name)}
        self._patterns = sorted(
            ((name, p) for name, p in prices.items() if name not in self._exact),
            key=lambda item: -len(item[0]),
        )
        self._found: dict[str, ModelPrice | None] = {}

    def price(self, model: str) -> ModelPrice | None:
        """The price of ``model``, if the table has one."""
        try:
            return self._found[model]
        except KeyError:
            pass
        found = self._exact.get(model)
        if found is None:
            found = next((p for name, p in self._patterns if fnmatchcase(model, name)), None)
        if len(self._found) < 1024:  # model names come from replies: keep the memo bounded
            self._found[model] = found
        return found

    def cost(self, model: str, usage: Usage) -> float | None:
        """What ``usage`` of ``model`` costs; ``None`` when the model has no price."""
        price = self.price(model)
        if price is None:
            return None
        cache_write = price.input if price.cache_write is None else price.cache_write
        cache_read = price.input if price.cache_read is None else price.cache_read
        return (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_write_tokens * cache_write
            + usage.cache_read_tokens * cache_read
        ) / PER_TOKENS

    def audio_cost(self, model: str, seconds: float) -> float | None:
        """What ``seconds`` of audio transcribed by ``model`` cost; ``None`` when the model
        has no price per minute of audio."""
        price = self.price(model)
        if price is None or price.audio_minute is None:
            return None
        return seconds / 60 * price.audio_minute
