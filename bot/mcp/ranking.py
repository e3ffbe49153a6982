"""How ``tool_search`` ranks MCP tools: relevance a keyword-stuffed description cannot buy.

A server writes its own tool descriptions, so a description that repeats every keyword it can
think of must not win searches it has nothing to do with. The query and each tool are cut
into terms (lower case, camelCase and ``snake_case`` split, a plural ``s`` dropped, common
words left out); a query term matches a tool's term when they are equal, or when the query
term (four letters or more) begins the tool's term (``calc`` finds ``calculator``). Then,
BM25-style:

* **each query term counts at most once per field**: repeating a word gains nothing;
* a term found in the **name** (``server__tool``) is worth 1, one found only in the
  **description** at most :data:`DESCRIPTION_WEIGHT`;
* that worth shrinks with the field's length (``k1`` = :data:`K1`, ``b`` = :data:`B`,
  against :data:`NAME_TERMS` and :data:`DESCRIPTION_TERMS` terms): a long description
  listing everything is worth little for any one word of it;
* terms are weighted by their rarity across the catalogue (``idf``); query terms no tool has
  are left out;
* a tool's **relevance** is the weighted share of the query it covers, from 0 to 1. Only
  tools with at least :data:`MIN_RELEVANCE` are activated, best first.

A query of common words only, or one no tool covers well enough, activates nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.mcp.sanitise import unmarked
from bot.tools.spec import ToolSpec

K1 = 1.2
B = 0.75
NAME_TERMS = 4.0
DESCRIPTION_TERMS = 24.0
DESCRIPTION_WEIGHT = 0.6
MIN_RELEVANCE = 0.3
MIN_PREFIX = 4

_COMMON = """a about all an and any are as at be by can could do does for from have how i in
into is it its me my need of on or our please should so some that the their them then there
these this to tool tools use using want was we what when which will with would you your"""
STOPWORDS = frozenset(_COMMON.split())
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^0-9a-z]+")


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """``text`` as ranking terms, in order, repeats kept."""
    words = _SPLIT.split(_CAMEL.sub(" ", text).lower())
    return [_stem(w) for w in words if w and w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class _Field:
    terms: frozenset[str]
    worth: float  # what one matched term is worth here, after length normalisation

    @classmethod
    def of(cls, words: list[str], reference: float, weight: float) -> _Field:
        norm = 1 - B + B * len(words) / reference
        worth = min(1.0, (K1 + 1) / (1 + K1 * norm)) * weight
        return cls(frozenset(words), worth)

    def matches(self, term: str) -> bool:
        if term in self.terms:
            return True
        return len(term) >= MIN_PREFIX and any(t.startswith(term) for t in self.terms)


@dataclass(frozen=True, slots=True)
class _Entry:
    name: _Field
    description: _Field

    @classmethod
    def of(cls, spec: ToolSpec) -> _Entry:
        return cls(
            name=_Field.of(terms(spec.name), NAME_TERMS, 1.0),
            description=_Field.of(
                terms(unmarked(spec.description)), DESCRIPTION_TERMS, DESCRIPTION_WEIGHT
            ),
        )

    def worth(self, term: str) -> float:
        """The best field's worth for ``term`` (0 when neither has it)."""
        best = 0.0
        if self.name.matches(term):
            best = self.name.worth
        if self.description.matches(term):
            best = max(best, self.description.worth)
        return best


class SearchIndex:
    """Ranks specs for a query; keeps each spec's terms while the spec object lives on."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[ToolSpec, _Entry]] = {}

    def _entry(self, spec: ToolSpec) -> _Entry:
        cached = self._entries.get(spec.name)
        if cached is not None and cached[0] is spec:
            return cached[1]
        entry = _Entry.of(spec)
        self._entries[spec.name] = (spec, entry)
        return entry

    def relevance(self, query: str, specs: Sequence[ToolSpec]) -> dict[str, float]:
        """Every spec's relevance to ``query`` (0 to 1), by name."""
        entries = {spec.name: self._entry(spec) for spec in specs}
        for gone in self._entries.keys() - entries.keys():
            del self._entries[gone]
        worths = {t: {n: e.worth(t) for n, e in entries.items()} for t in set(terms(query))}
        total = len(entries)
        idf: dict[str, float] = {}
        for term, by_tool in worths.items():
            having = sum(1 for w in by_tool.values() if w > 0)
            if having:
                idf[term] = math.log(1 + (total - having + 0.5) / (having + 0.5))
        weight = sum(idf.values())
        if not weight:
            return dict.fromkeys(entries, 0.0)
        return {name: sum(idf[t] * worths[t][name] for t in idf) / weight for name in entries}

    def ranked(self, query: str, specs: Sequence[ToolSpec], limit: int) -> list[ToolSpec]:
        """The specs relevant to ``query`` (at least :data:`MIN_RELEVANCE`), best first,
        ties by name, at most ``limit``."""
        scores = self.relevance(query, specs)
        found = [s for s in specs if scores[s.name] >= MIN_RELEVANCE]
        found.sort(key=lambda s: (-scores[s.name], s.name))
        return found[:limit]
