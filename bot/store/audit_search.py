"""The audit trail read a page at a time: filters, a reader's reach and keyset pagination.

The web console pages through a trail of any length, newest first, with the same cost on
the first page as on the thousandth: every query walks an index in ``(at, id)`` order from
where the last page ended (a :class:`AuditCursor`) and stops after one page, never an
``OFFSET``. Each filter has an index that starts with its column and continues with ``at``
(migration 0013), so the filter's rows are read already in order; the trail's own
``audit_at`` index serves an unfiltered page. ``tests/web/test_audit_store.py`` checks the
plans against 100,000 rows.

``channels`` is the reader's reach: the channels whose rows they may see (an approver sees
their channels' rows, an admin every row). It is part of the query, so a row out of reach
never leaves the database.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.store.statements import Params

PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditFilter:
    """Which rows to show. Text filters match whole values (a tool's name, a person's id,
    a decision's spelling, a channel ``kind.alias``; ``person`` a person's id as requester or
    decider); ``since`` and ``until`` bound ``at``
    (``since <= at < until``, epoch seconds). ``channels`` is the reader's reach: ``None``
    for every channel, else only those (an empty set reaches nothing)."""

    tool: str = ""
    requester: str = ""
    approver: str = ""
    #: A person's id, as requester or as the one who decided.
    person: str = ""
    decision: str = ""
    channel: str = ""
    since: float | None = None
    until: float | None = None
    channels: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class AuditCursor:
    """A position in the trail: the row ``(at, id)`` a page ended (or began) at. As text,
    ``<at>_<id>`` with ``at`` written so that it reads back as the same float."""

    at: float
    id: int

    def token(self) -> str:
        return f"{self.at!r}_{self.id}"

    @classmethod
    def parse(cls, text: str) -> AuditCursor:
        """The cursor ``text`` names; ``ValueError`` when it names none."""
        found = _CURSOR.fullmatch(text)
        if found is None:
            raise ValueError(f"not a position in the audit log: {text!r}")
        at = float(found.group(1))
        if not math.isfinite(at):
            raise ValueError(f"not a position in the audit log: {text!r}")
        return cls(at=at, id=int(found.group(2)))


_CURSOR = re.compile(r"([0-9][0-9.eE+-]{0,40})_([0-9]{1,19})")


def _where(flt: AuditFilter) -> tuple[list[str], list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    for column, value in (
        ("tool", flt.tool),
        ("requester", flt.requester),
        ("decided_by", flt.approver),
        ("decision", flt.decision),
        ("channel", flt.channel),
    ):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if flt.person:
        # each side walks its own index (requester_at, decided_by_at); a person's rows are
        # few next to the trail's, so they are sorted for the page
        clauses.append("(requester = ? OR decided_by = ?)")
        params += [flt.person, flt.person]
    if flt.since is not None:
        clauses.append("at >= ?")
        params.append(flt.since)
    if flt.until is not None:
        clauses.append("at < ?")
        params.append(flt.until)
    if flt.channels is not None:
        reach = sorted(flt.channels)
        if not reach:
            clauses.append("0 = 1")
        elif len(reach) == 1:
            clauses.append("channel = ?")
            params.append(reach[0])
        else:
            # Written as an expression (``channel || ''``, which both engines read) so that
            # the planner stays off the channel index for this term: several channels' rows
            # are not in ``at`` order there, so it would sort a whole channel's rows for one
            # page. Walking ``at`` and testing each row stops early.
            clauses.append(f"(channel || '') IN ({', '.join('?' * len(reach))})")
            params.extend(reach)
    return clauses, params


def page_query(
    flt: AuditFilter,
    *,
    before: AuditCursor | None = None,
    after: AuditCursor | None = None,
    limit: int = PAGE_SIZE,
) -> tuple[str, Params]:
    """The statement of one page: at most ``limit`` rows, newest first, older than
    ``before``; or, with ``after``, the ``limit`` rows just newer than it (oldest first: the
    caller reverses them). Exposed so that tests can ask the engine for its plan."""
    if before is not None and after is not None:
        raise ValueError("a page is either before or after a position, not both")
    clauses, params = _where(flt)
    order = "DESC"
    if before is not None:
        # ``at <= ?`` is the index range; the OR breaks ties between rows of the same ``at``.
        clauses.append("at <= ? AND (at < ? OR id < ?)")
        params += [before.at, before.at, before.id]
    elif after is not None:
        clauses.append("at >= ? AND (at > ? OR id > ?)")
        params += [after.at, after.at, after.id]
        order = "ASC"
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    sql = f"SELECT * FROM audit{where} ORDER BY at {order}, id {order} LIMIT ?"
    params.append(max(1, min(limit, MAX_PAGE_SIZE)))
    return sql, params
