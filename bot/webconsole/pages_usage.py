"""The Usage and budgets page: the figures of ``hatchway usage`` (model calls, tokens of each
kind and cost, by user, channel, agent or model, since a time), every budget of ``[budgets]``
with how much of it is spent in the current day and month, and the figures as CSV.

*Admins only* (usage is not kept per approver's reach). The sums come from
:meth:`bot.store.usage.UsageLog.summary` (what ``hatchway usage`` prints) and
:meth:`~bot.store.usage.UsageLog.spending` (what budgets count, in the budgets' zone,
``budgets.time_zone``). ``by`` and ``since`` are query parameters (``since``: ``7d``,
``24h``, ``90m`` or an ISO time); ``/usage/export.csv`` downloads the same rows, every cell
safe for a spreadsheet (a user key starting with ``=`` is text).
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from bot.approval.audit import parse_since, spreadsheet_cell
from bot.config.usage import BudgetLimits
from bot.store.usage import Spent, UsageGrouping, UsageScope, UsageSummary
from bot.usage.report import total
from bot.usage.windows import BudgetCalendar
from bot.webconsole import display
from bot.webconsole.pages import Access, PageRequest, Pages

PATH = "/usage"
EXPORT_PATH = f"{PATH}/export.csv"
DEFAULT_SINCE = "30d"
CSV_FIELDS = (
    "group",
    "calls",
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "cost",
    "priced_calls",
    "estimated_calls",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetRow:
    owner: str
    limit: str
    used: str
    share: int
    state: str


def register(pages: Pages) -> None:
    pages.add("GET", PATH, usage_page, access=Access.ADMIN, nav="Usage")
    pages.add("GET", EXPORT_PATH, usage_export, access=Access.ADMIN)


class UsageQueryError(ValueError):
    """A query parameter the page cannot use."""


def _query(page: PageRequest) -> tuple[UsageGrouping, str, float]:
    query = page.request.query
    by_text = query.get("by", "model")[:20]
    since_text = query.get("since", DEFAULT_SINCE).strip()[:40] or DEFAULT_SINCE
    try:
        by = UsageGrouping(by_text)
    except ValueError:
        raise UsageQueryError(f"by: {by_text!r} is not user, channel, agent or model") from None
    try:
        since = parse_since(since_text, time.time())
    except ValueError:
        raise UsageQueryError(
            f"since: {since_text!r} is neither a duration (7d, 24h, 90m) nor an ISO time"
        ) from None
    return by, since_text, since


def _cost(row: UsageSummary) -> str:
    if row.cost is None:
        return "-"
    return f"{row.cost:,.4f}" + ("*" if row.priced_calls < row.calls else "")


def _figures(row: UsageSummary) -> dict[str, str]:
    share = 100 * row.estimated_calls / row.calls if row.calls else 0.0
    return {
        "key": display.text(row.key, 120),
        "calls": f"{row.calls:,}",
        "input": f"{row.input_tokens:,}",
        "output": f"{row.output_tokens:,}",
        "cache_write": f"{row.cache_write_tokens:,}",
        "cache_read": f"{row.cache_read_tokens:,}",
        "cost": _cost(row),
        "estimated": f"{share:.0f} %",
    }


def _limits(owner: str, limits: BudgetLimits, spent: Spent | None) -> list[BudgetRow]:
    rows = []
    for label, amount, used in (
        ("tokens a day", limits.daily_tokens, spent.day_tokens if spent else 0),
        ("tokens a month", limits.monthly_tokens, spent.month_tokens if spent else 0),
        ("cost a day", limits.daily_cost, spent.day_cost if spent else 0.0),
        ("cost a month", limits.monthly_cost, spent.month_cost if spent else 0.0),
    ):
        if amount is None:
            continue
        share = 100 if amount == 0 else min(100, round(100 * float(used) / float(amount)))
        shown = f"{used:,}" if isinstance(used, int) else f"{used:,.4f}"
        limit = f"{amount:,}" if isinstance(amount, int) else f"{amount:,.4f}"
        rows.append(
            BudgetRow(
                owner=owner,
                limit=f"{limit} {label}",
                used=shown,
                share=share,
                state="spent" if used >= amount else ("near" if share >= 80 else "ok"),
            )
        )
    return rows


async def _budgets(page: PageRequest) -> tuple[list[BudgetRow], str]:
    budgets = page.host.settings.budgets
    calendar = BudgetCalendar(budgets.time_zone)
    day, month = calendar.windows(time.time())
    spending = await page.host.store.usage.spending(
        [UsageScope.AGENT, UsageScope.CHANNEL], day_start=day.start, month_start=month.start
    )
    spent = {(s.scope, s.key): s for s in spending.spent}
    rows: list[BudgetRow] = []
    for name, limits in sorted(budgets.agents.items()):
        rows += _limits(f"agent {name}", limits, spent.get((UsageScope.AGENT, name)))
    for name, limits in sorted(budgets.channels.items()):
        rows += _limits(f"channel {name}", limits, spent.get((UsageScope.CHANNEL, name)))
    # per person and per conversation: the limit each one is held to (their own use is on
    # the table above, by user)
    rows += _limits("each person", budgets.per_user, None)
    rows += _limits("each conversation", budgets.per_conversation, None)
    return rows, budgets.time_zone


async def usage_page(page: PageRequest) -> web.StreamResponse:
    context: dict[str, Any] = {
        "path": PATH,
        "groupings": [g.value for g in UsageGrouping],
        "by": page.request.query.get("by", "model")[:20],
        "since": page.request.query.get("since", DEFAULT_SINCE)[:40],
        "rows": [],
        "total": None,
        "error": "",
        "export": EXPORT_PATH,
        "since_when": "",
    }
    context["budgets"], context["budget_zone"] = await _budgets(page)
    try:
        by, since_text, since = _query(page)
    except UsageQueryError as exc:
        context["error"] = str(exc)
        return page.render("usage.html", context, status=400)
    rows = await page.host.store.usage.summary(by, since=since)
    context.update(
        rows=[_figures(r) for r in rows],
        total=_figures(total(rows)) if rows else None,
        unpriced=any(r.cost is not None and r.priced_calls < r.calls for r in rows),
        export=f"{EXPORT_PATH}?{urlencode({'by': by.value, 'since': since_text})}",
        since_when=display.when(since),
    )
    return page.render("usage.html", context)


async def usage_export(page: PageRequest) -> web.StreamResponse:
    try:
        by, _since_text, since = _query(page)
    except UsageQueryError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    rows = await page.host.store.usage.summary(by, since=since)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([by.value, *CSV_FIELDS[1:]])
    for row in rows:
        writer.writerow(
            spreadsheet_cell(value)
            for value in (
                row.key,
                row.calls,
                row.input_tokens,
                row.output_tokens,
                row.cache_write_tokens,
                row.cache_read_tokens,
                "" if row.cost is None else f"{row.cost:.6f}",
                row.priced_calls,
                row.estimated_calls,
            )
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return web.Response(
        text=out.getvalue(),
        content_type="text/csv",
        charset="utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="hatchway-usage-{by.value}-{stamp}.csv"'
        },
    )
