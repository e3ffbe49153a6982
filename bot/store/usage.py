"""What each model call used (``usage``, one row per call) and the budget notices sent.

A turn's rows are written with its own records (:meth:`bot.store.UnitOfWork.record_usage`,
in the tool batch's or the answer's transaction), so recording costs no trip of its own.
The sums read back are what budgets (:mod:`bot.usage`) and ``hatchway usage`` see: per scope
and window (:meth:`UsageLog.spending`, with the id of the last row they count, after which
:meth:`UsageLog.charges_after` reads only the rows written since) and per group
(:meth:`UsageLog.summary`).

A row's tokens are counted in four kinds that never overlap (``input_tokens`` leaves the
cache's out, see :class:`bot.providers.base.Usage`); a budget's tokens are all four.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from bot.providers.base import Usage
from bot.store.engine import Database
from bot.store.statements import Params, Row, Write


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRecord:
    """One model call: when it returned (``at``, epoch seconds), whose turn it was, which
    provider and model answered, what it used, how long the turn waited for it, and its
    cost from the price table (``None``: the model has no price)."""

    at: float
    turn_id: str
    session_key: str
    channel: str
    conversation_id: str
    user_id: str
    agent: str
    provider: str
    model: str
    usage: Usage
    latency_ms: int
    cost: float | None
    #: The seconds of audio a transcription read (0 for a model call, whose tokens count).
    audio_seconds: float = 0.0


_INSERT = (
    "INSERT INTO usage (at, turn_id, session_key, channel, conversation_id, user_id, agent,"
    " provider, model, input_tokens, output_tokens, cache_write_tokens, cache_read_tokens,"
    " estimated, latency_ms, cost, audio_seconds)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(rec: UsageRecord) -> tuple[object, ...]:
    usage = rec.usage
    return (
        rec.at,
        rec.turn_id,
        rec.session_key,
        rec.channel,
        rec.conversation_id,
        rec.user_id,
        rec.agent,
        rec.provider,
        rec.model,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_write_tokens,
        usage.cache_read_tokens,
        int(usage.estimated),
        rec.latency_ms,
        rec.cost,
        rec.audio_seconds,
    )


def recording(records: Sequence[UsageRecord]) -> list[Write]:
    """The write that inserts ``records`` (for a unit of work); none for no rows."""
    if not records:
        return []
    return [Write(_INSERT, [_row(rec) for rec in records])]


class UsageScope(enum.StrEnum):
    """What a budget counts the calls of; each names its rows by a key (:data:`SCOPE_KEYS`)."""

    USER = "user"
    CONVERSATION = "conversation"
    AGENT = "agent"
    CHANNEL = "channel"


#: Each scope's key as SQL over a ``usage`` row; :func:`scope_key` builds the same in Python.
SCOPE_KEYS: dict[UsageScope, str] = {
    UsageScope.USER: "channel || ' ' || user_id",
    UsageScope.CONVERSATION: "channel || ' ' || conversation_id",
    UsageScope.AGENT: "agent",
    UsageScope.CHANNEL: "channel",
}


def scope_key(
    scope: UsageScope, *, channel: str, conversation_id: str, user_id: str, agent: str
) -> str:
    """A call's key in ``scope`` (the value :data:`SCOPE_KEYS` computes in SQL)."""
    if scope is UsageScope.USER:
        return f"{channel} {user_id}"
    if scope is UsageScope.CONVERSATION:
        return f"{channel} {conversation_id}"
    if scope is UsageScope.AGENT:
        return agent
    return channel


def record_key(scope: UsageScope, record: UsageRecord) -> str:
    """``record``'s key in ``scope``."""
    return scope_key(
        scope,
        channel=record.channel,
        conversation_id=record.conversation_id,
        user_id=record.user_id,
        agent=record.agent,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Spent:
    """What one scope key used since the day's start and since the month's start (tokens of
    all four kinds; cost of the priced calls)."""

    scope: UsageScope
    key: str
    day_tokens: int
    day_cost: float
    month_tokens: int
    month_cost: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Spending:
    """The sums per scope key, and the id of the last row they count."""

    spent: list[Spent]
    last_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Charge:
    """One row as budgets count it: its id, when, whose, and its tokens and cost."""

    id: int
    at: float
    channel: str
    conversation_id: str
    user_id: str
    agent: str
    tokens: int
    cost: float


_TOKENS = "(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens)"
# The last row's id travels as one more row of the sums' query, so both come from one
# snapshot of the table (one statement) in one trip.
_LAST_ID = (
    "SELECT 'last' AS scope, '' AS group_key, COALESCE(MAX(id), 0) AS day_tokens,"
    " 0 AS day_cost, 0 AS month_tokens, 0 AS month_cost FROM usage"
)
_CHARGES = (
    "SELECT id, at, channel, conversation_id, user_id, agent,"
    f" {_TOKENS} AS tokens, COALESCE(cost, 0) AS cost FROM usage WHERE id > ? ORDER BY id"
)


def _spending_sql(scope: UsageScope, *, one: bool = False) -> str:
    """Each group's spending in ``scope`` since the day's and the month's start; ``one``: only
    the group a further parameter names."""
    key = SCOPE_KEYS[scope]
    only = f" AND {key} = ?" if one else ""
    return (
        f"SELECT '{scope.value}' AS scope, {key} AS group_key,"
        f" SUM(CASE WHEN at >= ? THEN {_TOKENS} ELSE 0 END) AS day_tokens,"
        " SUM(CASE WHEN at >= ? THEN COALESCE(cost, 0) ELSE 0 END) AS day_cost,"
        f" SUM({_TOKENS}) AS month_tokens, SUM(COALESCE(cost, 0)) AS month_cost"
        f" FROM usage WHERE at >= ?{only} GROUP BY {key}"
    )


class UsageGrouping(enum.StrEnum):
    """What ``hatchway usage --by`` groups rows by."""

    USER = "user"
    CHANNEL = "channel"
    AGENT = "agent"
    MODEL = "model"


_GROUP_KEYS: dict[UsageGrouping, str] = {
    UsageGrouping.USER: SCOPE_KEYS[UsageScope.USER],
    UsageGrouping.CHANNEL: "channel",
    UsageGrouping.AGENT: "agent",
    UsageGrouping.MODEL: "model",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageSummary:
    """The calls of one group: how many, their tokens of each kind, the cost of the priced
    ones (``None`` when none was priced), and how many were priced and estimated."""

    key: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    cost: float | None
    priced_calls: int
    estimated_calls: int


def _summary(r: Row) -> UsageSummary:
    return UsageSummary(
        key=str(r["group_key"]),
        calls=int(r["calls"]),
        input_tokens=int(r["input_tokens"]),
        output_tokens=int(r["output_tokens"]),
        cache_write_tokens=int(r["cache_write_tokens"]),
        cache_read_tokens=int(r["cache_read_tokens"]),
        cost=None if r["cost"] is None else float(r["cost"]),
        priced_calls=int(r["priced_calls"]),
        estimated_calls=int(r["estimated_calls"]),
    )


def _record(r: Row) -> UsageRecord:
    return UsageRecord(
        at=float(r["at"]),
        turn_id=r["turn_id"],
        session_key=r["session_key"],
        channel=r["channel"],
        conversation_id=r["conversation_id"],
        user_id=r["user_id"],
        agent=r["agent"],
        provider=r["provider"],
        model=r["model"],
        usage=Usage(
            input_tokens=int(r["input_tokens"]),
            output_tokens=int(r["output_tokens"]),
            cache_write_tokens=int(r["cache_write_tokens"]),
            cache_read_tokens=int(r["cache_read_tokens"]),
            estimated=bool(r["estimated"]),
        ),
        latency_ms=int(r["latency_ms"]),
        cost=None if r["cost"] is None else float(r["cost"]),
        audio_seconds=float(r["audio_seconds"]),
    )


_NOTICE = (
    "INSERT INTO budget_notices (channel, conversation_id, budget, window_start, at, turn_id)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (channel, conversation_id, budget, window_start) DO NOTHING RETURNING turn_id"
)


class UsageLog:
    """The ``usage`` and ``budget_notices`` tables."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, records: Sequence[UsageRecord]) -> None:
        """Insert ``records`` in a transaction of their own (one trip); a turn's rows go with
        its unit of work instead."""
        writes = recording(records)
        if writes:
            await self._db.commit(writes)

    async def spending(
        self, scopes: Sequence[UsageScope], *, day_start: float, month_start: float
    ) -> Spending:
        """What each key of ``scopes`` used since ``day_start`` and since ``month_start``
        (one query, one trip), and the id of the last row counted; a key with no rows since
        the earlier of the two is absent."""
        since = min(day_start, month_start)
        sql = " UNION ALL ".join([*(_spending_sql(scope) for scope in scopes), _LAST_ID])
        params: Params = [value for _ in scopes for value in (day_start, day_start, since)]
        rows = await self._db.fetchall(sql, params)
        last_id = 0
        spent: list[Spent] = []
        for r in rows:
            if r["scope"] == "last":
                last_id = int(r["day_tokens"])
                continue
            spent.append(
                Spent(
                    scope=UsageScope(r["scope"]),
                    key=str(r["group_key"]),
                    day_tokens=int(r["day_tokens"] or 0),
                    day_cost=float(r["day_cost"] or 0.0),
                    month_tokens=int(r["month_tokens"] or 0),
                    month_cost=float(r["month_cost"] or 0.0),
                )
            )
        return Spending(spent=spent, last_id=last_id)

    async def spent_of(
        self, keys: Sequence[tuple[UsageScope, str]], *, day_start: float, month_start: float
    ) -> list[Spent]:
        """What each of ``keys`` ((scope, key) pairs) used since ``day_start`` and since
        ``month_start``, in one query (``/usage``: a few keys, not every one); a key with no
        rows since the earlier of the two is absent."""
        if not keys:
            return []
        since = min(day_start, month_start)
        sql = " UNION ALL ".join(_spending_sql(scope, one=True) for scope, _ in keys)
        params: Params = [v for _, key in keys for v in (day_start, day_start, since, key)]
        return [
            Spent(
                scope=UsageScope(r["scope"]),
                key=str(r["group_key"]),
                day_tokens=int(r["day_tokens"] or 0),
                day_cost=float(r["day_cost"] or 0.0),
                month_tokens=int(r["month_tokens"] or 0),
                month_cost=float(r["month_cost"] or 0.0),
            )
            for r in await self._db.fetchall(sql, params)
        ]

    async def charges_after(self, last_id: int) -> list[Charge]:
        """The rows written after row ``last_id``, oldest first (what budgets add to the
        sums they read: a few rows, not the month's)."""
        rows = await self._db.fetchall(_CHARGES, (last_id,))
        return [
            Charge(
                id=int(r["id"]),
                at=float(r["at"]),
                channel=r["channel"],
                conversation_id=r["conversation_id"],
                user_id=r["user_id"],
                agent=r["agent"],
                tokens=int(r["tokens"]),
                cost=float(r["cost"]),
            )
            for r in rows
        ]

    async def summary(self, by: UsageGrouping, *, since: float) -> list[UsageSummary]:
        """The calls since ``since``, one :class:`UsageSummary` per group, by key."""
        key = _GROUP_KEYS[by]
        rows = await self._db.fetchall(
            f"SELECT {key} AS group_key, COUNT(*) AS calls,"
            " SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens,"
            " SUM(cache_write_tokens) AS cache_write_tokens,"
            " SUM(cache_read_tokens) AS cache_read_tokens,"
            " SUM(cost) AS cost, COUNT(cost) AS priced_calls, SUM(estimated) AS estimated_calls"
            f" FROM usage WHERE at >= ? GROUP BY {key}",
            (since,),
        )
        # sorted here, by code point: the database's collation would order keys differently
        # on each engine (ICU puts "_" and "-" before letters and ignores case first)
        return sorted((_summary(r) for r in rows), key=lambda summary: summary.key)

    async def of_turn(self, turn_id: str) -> list[UsageRecord]:
        """The rows of one turn, in the order they were written."""
        rows = await self._db.fetchall(
            "SELECT * FROM usage WHERE turn_id = ? ORDER BY id", (turn_id,)
        )
        return [_record(r) for r in rows]

    async def since(self, at: float) -> list[UsageRecord]:
        """Every row written at or after ``at``, oldest first."""
        rows = await self._db.fetchall("SELECT * FROM usage WHERE at >= ? ORDER BY id", (at,))
        return [_record(r) for r in rows]

    async def notice_once(
        self,
        *,
        channel: str,
        conversation_id: str,
        budget: str,
        window_start: float,
        at: float,
        turn_id: str,
    ) -> bool:
        """Record that ``budget``'s notice for this window goes to the conversation; False
        when one already went (nothing is written then). One statement, one trip."""
        row = await self._db.execute_returning(
            _NOTICE, (channel, conversation_id, budget, window_start, at, turn_id)
        )
        return row is not None
