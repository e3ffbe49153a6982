"""The table ``hatchway usage`` prints: one line per group, then the total.

Tokens of each kind, the cost of the priced calls (in the currency of ``[pricing]``; ``-``
when none of the group's calls had a price, a ``*`` when only some had), the number of
calls, and the share of them whose usage was estimated.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.usage import UsageGrouping, UsageSummary

HEADERS = ("calls", "input", "output", "cache write", "cache read", "cost", "estimated")
UNPRICED_NOTE = "* some of these calls have no price: their tokens are counted, not their cost"


def total(rows: Sequence[UsageSummary]) -> UsageSummary:
    """The sum of ``rows``."""
    priced = [r.cost for r in rows if r.cost is not None]
    return UsageSummary(
        key="total",
        calls=sum(r.calls for r in rows),
        input_tokens=sum(r.input_tokens for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
        cache_write_tokens=sum(r.cache_write_tokens for r in rows),
        cache_read_tokens=sum(r.cache_read_tokens for r in rows),
        cost=sum(priced) if priced else None,
        priced_calls=sum(r.priced_calls for r in rows),
        estimated_calls=sum(r.estimated_calls for r in rows),
    )


def _cost(row: UsageSummary) -> str:
    if row.cost is None:
        return "-"
    return f"{row.cost:,.4f}" + ("*" if row.priced_calls < row.calls else "")


def _cells(row: UsageSummary) -> tuple[str, ...]:
    share = 100 * row.estimated_calls / row.calls if row.calls else 0.0
    return (
        row.key,
        f"{row.calls:,}",
        f"{row.input_tokens:,}",
        f"{row.output_tokens:,}",
        f"{row.cache_write_tokens:,}",
        f"{row.cache_read_tokens:,}",
        _cost(row),
        f"{share:.0f} %",
    )


def render(rows: Sequence[UsageSummary], by: UsageGrouping) -> str:
    """The table (with its total line and, if needed, the note on unpriced calls)."""
    if not rows:
        return "no model calls recorded in this period\n"
    lines = [(by.value, *HEADERS), *(_cells(r) for r in rows), _cells(total(rows))]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
    out.insert(len(out) - 1, "  ".join("-" * w for w in widths))
    if any(r.cost is not None and r.priced_calls < r.calls for r in rows):
        out.append(UNPRICED_NOTE)
    return "\n".join(out) + "\n"
