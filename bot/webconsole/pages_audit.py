"""The Audit log page: every approval decision, filtered, a page at a time, and as CSV.

Each row reads in the chat's words (``denied with a reply``, ``refused: not an approver``:
:func:`bot.webconsole.outcomes.decision_words`), names people by display name beside their
id (:mod:`bot.webconsole.people`) and conversations by title beside theirs
(:mod:`bot.webconsole.places`), and carries the turn and call ids of the call it is about,
as the row records them (migration 0020), linked to the call on the turns page once the
call's row is written, with the ``hatchway receipts verify`` command that checks it. A row
written before those ids were kept says "not recorded".

Filters (query parameters, so a filtered page can be bookmarked and shared): ``person`` (a
person's id, as requester or decider), ``tool``,
``requester``, ``approver`` (who decided: a person's id, ``runtime``, ``operator:NAME``),
``decision`` (a :class:`~bot.store.audit.Decision` spelling), ``channel`` and the dates
``from`` and ``to`` (UTC days, both included; or ISO times). Pages are newest first and
continue with ``before=`` or go back with ``after=`` (:class:`~bot.store.audit_search.AuditCursor`):
the database walks an index from there (:mod:`bot.store.audit_search`), so the thousandth
page costs what the first does. ``/audit/export.csv`` streams every matching row
(:mod:`bot.webconsole.audit_export`).

An approver sees the rows of the channels they approve and no others: their channels are
part of every query, the export's too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from bot.store.audit import AuditEntry, Decision
from bot.store.audit_search import AuditCursor, AuditFilter
from bot.store.tool_calls import ToolCallRecord
from bot.webconsole import display
from bot.webconsole.audit_export import stream_csv
from bot.webconsole.outcomes import decision_words
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.pages_turns import SESSION_PATH
from bot.webconsole.people import People, kind_of
from bot.webconsole.places import Places

PATH = "/audit"
EXPORT_PATH = f"{PATH}/export.csv"
FILTER_KEYS = ("person", "tool", "requester", "approver", "decision", "channel", "from", "to")
MAX_FILTER_CHARS = 200


class FilterError(ValueError):
    """A query parameter the page cannot use; its message says which and why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRow:
    id: int
    at: str
    channel: str
    conversation: str
    requester: str
    tool: str
    summary: str
    decision: str
    decision_class: str
    decided_by: str
    reason: str
    latency: str
    turn_id: str
    call_id: str
    call_href: str
    verify: str


def _row(
    entry: AuditEntry,
    calls: dict[tuple[str, str], ToolCallRecord],
    people: People,
    places: Places,
) -> AuditRow:
    kind = kind_of(entry.channel)
    words, css = decision_words(entry.decision, entry.reason)
    refused = css == "outcome-refused"
    href = verify = ""
    if entry.turn_id is not None:
        verify = f"hatchway receipts verify --turn {entry.turn_id}"
        call = calls.get((entry.turn_id, entry.call_id or ""))
        if call is not None:
            key = urlencode({"key": call.session_key})
            href = f"{SESSION_PATH}?{key}#call-{quote(call.call_id, safe='')}"
    return AuditRow(
        id=entry.id,
        at=display.when(entry.at),
        channel=display.text(entry.channel),
        conversation=places.show(entry.channel, entry.conversation_id),
        requester=people.show(kind, entry.requester),
        tool=display.text(entry.tool),
        summary=display.summary_lines(entry.summary),
        decision=words,
        decision_class=css,
        decided_by=people.show(kind, entry.decided_by),
        # a refused click's reason is in its words; the runtime's too
        reason=""
        if refused or entry.decision in (Decision.EXPIRED, Decision.AUTO_DENIED)
        else display.text(entry.reason, 300),
        latency=display.duration(entry.latency_ms / 1000) if entry.latency_ms else "",
        turn_id=display.text(entry.turn_id or "", 80),
        call_id=display.text(entry.call_id or "", 80),
        call_href=href,
        verify=display.text(verify, 200),
    )


def _day_or_time(text: str, *, end: bool) -> float:
    """A ``from``/``to`` value: a day (``to`` includes the whole day) or an ISO time (UTC
    when it names no zone)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return (start + timedelta(days=1) if end else start).timestamp()
        stamp = datetime.fromisoformat(text)
    except ValueError:
        name = "to" if end else "from"
        raise FilterError(
            f"{name}: {text!r} is neither a day (2030-01-31) nor an ISO time"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def parse_filter(query: Any, viewer_reach: frozenset[str] | None) -> AuditFilter:
    """The :class:`AuditFilter` of a request's query; :class:`FilterError` when a value is
    unusable."""
    values = {key: str(query.get(key, "")).strip()[:MAX_FILTER_CHARS] for key in FILTER_KEYS}
    decision = values["decision"]
    if decision and decision not in {d.value for d in Decision}:
        raise FilterError(f"decision: {decision!r} is not a decision this log records")
    flt = AuditFilter(
        person=values["person"],
        tool=values["tool"],
        requester=values["requester"],
        approver=values["approver"],
        decision=decision,
        channel=values["channel"],
        channels=viewer_reach,
    )
    if values["from"]:
        flt = replace(flt, since=_day_or_time(values["from"], end=False))
    if values["to"]:
        flt = replace(flt, until=_day_or_time(values["to"], end=True))
    return flt


def _cursor(query: Any, name: str) -> AuditCursor | None:
    raw = str(query.get(name, ""))
    if not raw:
        return None
    try:
        return AuditCursor.parse(raw)
    except ValueError:
        raise FilterError(
            f"{name}: not a position in the audit log; start again from the top"
        ) from None


def register(pages: Pages) -> None:
    pages.add("GET", PATH, audit_page, access=Access.SIGNED_IN, nav="Audit log")
    pages.add("GET", EXPORT_PATH, audit_export, access=Access.SIGNED_IN)


def _channels(page: PageRequest) -> list[str]:
    configured = [f"{kind}.{alias}" for kind, alias, _ in page.host.settings.channels.all()]
    return [c for c in configured if page.viewer.may_read(c)]


async def audit_page(page: PageRequest) -> web.StreamResponse:
    query = page.request.query
    shown = {key: str(query.get(key, "")).strip()[:MAX_FILTER_CHARS] for key in FILTER_KEYS}
    kept = {k: v for k, v in shown.items() if v}
    context: dict[str, Any] = {
        "form": shown,
        "decisions": [(d.value, decision_words(d, "")[0]) for d in Decision],
        "channels": _channels(page),
        "path": PATH,
        "rows": [],
        "older": "",
        "newer": "",
        "error": "",
        "export": f"{EXPORT_PATH}?{urlencode(kept)}" if kept else EXPORT_PATH,
        "reach": sorted(page.viewer.approves) if not page.viewer.admin else None,
    }
    try:
        flt = parse_filter(query, display.reach(page.viewer))
        before, after = _cursor(query, "before"), _cursor(query, "after")
    except FilterError as exc:
        context["error"] = str(exc)
        return page.render("audit.html", context, status=400)
    found = await page.host.store.audit.page(flt, before=before, after=after)
    store = page.host.store
    recorded = await store.tool_calls.for_turns([e.turn_id for e in found.entries if e.turn_id])
    calls = {(c.turn_id, c.call_id): c for c in recorded}
    who = [(kind_of(e.channel), e.requester) for e in found.entries]
    who += [(kind_of(e.channel), e.decided_by) for e in found.entries]
    people = await People.load(store, who)
    places = await Places.load(store, [(e.channel, e.conversation_id, None) for e in found.entries])
    context["rows"] = [_row(e, calls, people, places) for e in found.entries]
    if found.older is not None:
        context["older"] = f"{PATH}?{urlencode({**kept, 'before': found.older.token()})}"
    if found.newer is not None:
        context["newer"] = f"{PATH}?{urlencode({**kept, 'after': found.newer.token()})}"
    return page.render("audit.html", context)


async def audit_export(page: PageRequest) -> web.StreamResponse:
    try:
        flt = parse_filter(page.request.query, display.reach(page.viewer))
    except FilterError as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return await stream_csv(
        page.request, page.host.store.audit.matching(flt), filename=f"hatchway-audit-{stamp}.csv"
    )
