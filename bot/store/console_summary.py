"""The figures the console's health summary reads: the decisions people made since a time
(and how long each request waited), the requests pending now, and the turns and tool calls
that failed since a time, within a reader's reach (``None``: every channel; else only those,
applied in the query). Each is one query over an index the tables already have
(``audit_at``, ``approvals_status``, ``inbox_age``, ``tool_calls_age``), reading one day's
decisions and one hour's failures."""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.engine import Database

#: The decisions a person (or the runtime, for a request nobody answered) made on a request.
ASKED_DECISIONS = ("approved", "always", "denied", "edited", "expired")


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """What the health page's summary says: decisions since ``since`` (and their waits, in
    milliseconds, sorted), requests pending now, failed turns and failed tool calls since
    ``errors_since``, per channel."""

    decisions: int
    waits_ms: tuple[float, ...]
    pending: int
    failed_turns: dict[str, int]
    failed_calls: dict[str, int]


def _reach(column: str, channels: frozenset[str] | None) -> tuple[str, list[object]]:
    if channels is None:
        return "", []
    if not channels:
        return " AND 0 = 1", []
    reach = sorted(channels)
    return f" AND {column} IN ({', '.join('?' * len(reach))})", list(reach)


async def summary(
    db: Database, *, since: float, errors_since: float, channels: frozenset[str] | None
) -> Summary:
    """The figures of :class:`Summary` for the reader whose reach is ``channels``."""
    marks = ", ".join("?" * len(ASKED_DECISIONS))
    reach, params = _reach("channel", channels)
    waits = await db.fetchall(
        f"SELECT latency_ms FROM audit WHERE at >= ? AND decision IN ({marks}){reach}",
        [since, *ASKED_DECISIONS, *params],
    )
    pending = await db.fetchone(
        f"SELECT COUNT(*) AS n FROM approvals WHERE status = 'pending'{reach}", params
    )
    turns = await db.fetchall(
        "SELECT channel, COUNT(*) AS n FROM inbox WHERE status = 'failed' AND updated_at >= ?"
        f"{reach} GROUP BY channel",
        [errors_since, *params],
    )
    calls = await db.fetchall(
        "SELECT channel, COUNT(*) AS n FROM tool_calls WHERE failed = 1 AND created_at >= ?"
        f"{reach} GROUP BY channel",
        [errors_since, *params],
    )
    return Summary(
        decisions=len(waits),
        waits_ms=tuple(sorted(float(r["latency_ms"]) for r in waits)),
        pending=int(pending["n"]) if pending is not None else 0,
        failed_turns={str(r["channel"]): int(r["n"]) for r in turns},
        failed_calls={str(r["channel"]): int(r["n"]) for r in calls},
    )
