"""The ``usage`` table and the budget notices on both engines: rows ride with a unit of
work, sums per scope and window, summaries per group, one notice per window."""

from __future__ import annotations

from dataclasses import replace

from bot.providers.base import ChatMessage, Usage
from bot.store import Store, UnitOfWork, UsageRecord
from bot.store.usage import Spent, UsageGrouping, UsageScope

DAY = 1_000_000.0  # the window starts used below (epoch seconds)
MONTH = DAY - 20 * 86400


def row(at: float, **changes: object) -> UsageRecord:
    base = UsageRecord(
        at=at,
        turn_id="t1",
        session_key="telegram.main:42",
        channel="telegram.main",
        conversation_id="42",
        user_id="1001",
        agent="default",
        provider="main",
        model="gpt-4o",
        usage=Usage(input_tokens=100, output_tokens=20, cache_write_tokens=3, cache_read_tokens=7),
        latency_ms=250,
        cost=0.5,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


async def test_rows_commit_with_the_turns_records_in_one_trip(store: Store) -> None:
    records = [row(DAY + 1), row(DAY + 2, usage=Usage(output_tokens=9, estimated=True), cost=None)]
    work = UnitOfWork().append_history("telegram.main:42", "t1", [ChatMessage(role="user")])
    work.record_usage(records)
    trips = store.db.trips
    await store.commit(work)
    assert store.db.trips == trips + 1
    assert await store.usage.of_turn("t1") == records


async def test_spending_per_scope_and_window(store: Store) -> None:
    await store.usage.record(
        [
            row(MONTH - 1),  # last month: counted nowhere
            row(MONTH + 5),  # this month, an earlier day
            row(DAY + 5),
            row(DAY + 6, user_id="2002", cost=None),
            row(DAY + 7, agent="ops", channel="slack.work", conversation_id="C1"),
        ]
    )
    spending = await store.usage.spending(
        [UsageScope.USER, UsageScope.AGENT], day_start=DAY, month_start=MONTH
    )
    spent = spending.spent
    by_key = {(s.scope, s.key): s for s in spent}
    assert by_key[(UsageScope.USER, "telegram.main 1001")] == Spent(
        scope=UsageScope.USER,
        key="telegram.main 1001",
        day_tokens=130,
        day_cost=0.5,
        month_tokens=260,
        month_cost=1.0,
    )
    assert by_key[(UsageScope.USER, "telegram.main 2002")].day_cost == 0.0  # unpriced
    assert by_key[(UsageScope.USER, "slack.work 1001")].month_tokens == 130
    assert by_key[(UsageScope.AGENT, "default")].month_tokens == 390
    assert by_key[(UsageScope.AGENT, "ops")].day_tokens == 130
    assert len(spent) == 5
    nothing = await store.usage.spending([], day_start=DAY, month_start=MONTH)
    assert nothing.spent == []
    assert nothing.last_id == spending.last_id > 0
    assert await store.usage.charges_after(spending.last_id) == []  # it counts them all


async def test_spent_of_a_few_keys_only(store: Store) -> None:
    await store.usage.record(
        [
            row(MONTH - 1),
            row(MONTH + 5),
            row(DAY + 5),
            row(DAY + 6, user_id="2002"),
            row(DAY + 7, channel="slack.work", conversation_id="C1"),
        ]
    )
    keys = [
        (UsageScope.USER, "telegram.main 1001"),
        (UsageScope.CONVERSATION, "telegram.main 42"),
        (UsageScope.USER, "telegram.main 9999"),  # no rows: absent
    ]
    found = await store.usage.spent_of(keys, day_start=DAY, month_start=MONTH)
    by_key = {(s.scope, s.key): s for s in found}
    assert set(by_key) == set(keys[:2])
    assert by_key[keys[0]] == Spent(
        scope=UsageScope.USER,
        key="telegram.main 1001",
        day_tokens=130,
        day_cost=0.5,
        month_tokens=260,
        month_cost=1.0,
    )
    assert (by_key[keys[1]].day_tokens, by_key[keys[1]].month_tokens) == (260, 390)
    assert await store.usage.spent_of([], day_start=DAY, month_start=MONTH) == []


async def test_charges_after_the_last_row_read(store: Store) -> None:
    before = await store.usage.spending([UsageScope.USER], day_start=DAY, month_start=MONTH)
    assert (before.spent, before.last_id) == ([], 0)
    await store.usage.record([row(DAY + 1), row(DAY + 2, user_id="2002", cost=None)])
    first, second = await store.usage.charges_after(before.last_id)
    assert (first.user_id, first.tokens, first.cost, first.at) == ("1001", 130, 0.5, DAY + 1)
    assert (second.user_id, second.cost) == ("2002", 0.0)
    assert first.id < second.id
    assert await store.usage.charges_after(second.id) == []
    read = await store.usage.spending([UsageScope.USER], day_start=DAY, month_start=MONTH)
    assert read.last_id == second.id


async def test_summary_by_each_grouping(store: Store) -> None:
    await store.usage.record(
        [
            row(DAY - 10),  # before --since
            row(DAY + 1),
            row(DAY + 2, model="local", cost=None, usage=Usage(input_tokens=4, estimated=True)),
            row(DAY + 3, user_id="2002"),
        ]
    )
    [gpt, local] = await store.usage.summary(UsageGrouping.MODEL, since=DAY)
    assert (gpt.key, gpt.calls, gpt.input_tokens, gpt.output_tokens) == ("gpt-4o", 2, 200, 40)
    assert (gpt.cache_write_tokens, gpt.cache_read_tokens) == (6, 14)
    assert (gpt.cost, gpt.priced_calls, gpt.estimated_calls) == (1.0, 2, 0)
    assert (local.key, local.cost, local.priced_calls, local.estimated_calls) == (
        "local",
        None,
        0,
        1,
    )
    users = await store.usage.summary(UsageGrouping.USER, since=DAY)
    assert [(u.key, u.calls) for u in users] == [
        ("telegram.main 1001", 2),
        ("telegram.main 2002", 1),
    ]
    [channel] = await store.usage.summary(UsageGrouping.CHANNEL, since=0)
    assert (channel.key, channel.calls) == ("telegram.main", 4)


async def test_one_notice_per_budget_window_and_conversation(store: Store) -> None:
    async def notice(conversation: str, budget: str, window: float, turn: str) -> bool:
        return await store.usage.notice_once(
            channel="telegram.main",
            conversation_id=conversation,
            budget=budget,
            window_start=window,
            at=window + 1,
            turn_id=turn,
        )

    assert await notice("42", "conversation:telegram.main 42:day", DAY, "t1")
    assert not await notice("42", "conversation:telegram.main 42:day", DAY, "t2")
    assert await notice("43", "conversation:telegram.main 42:day", DAY, "t3")
    assert await notice("42", "user:telegram.main 1001:day", DAY, "t4")
    assert await notice("42", "conversation:telegram.main 42:day", DAY + 86400, "t5")


async def test_a_summary_is_in_the_same_order_under_every_collation(text_store: Store) -> None:
    # ICU's en-US and glibc's en_US put "_" and "-" before letters and weigh case last;
    # the summary is by code point everywhere
    models = ["gpt-4o", "Gpt-5", "_local", "gpt_4o", "gpt-4o-mini", "GPT"]
    await text_store.usage.record([row(DAY + n, model=m) for n, m in enumerate(models)])
    summary = await text_store.usage.summary(UsageGrouping.MODEL, since=DAY)
    assert [s.key for s in summary] == sorted(models)
