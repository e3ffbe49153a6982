"""A person's standing, for ``/usage``: what they used in the current day and month, and what
is left of each budget their messages are held to.

Their own usage is every call of theirs on the channel alias they ask from, in every
conversation (the ``per_user`` scope's key), in the budgets' windows (``budgets.time_zone``).
The budgets are the ones a turn of theirs in this conversation would be held to
(:meth:`bot.usage.budgets.BudgetRules.for_turn`: their own, the conversation's, the agent's,
the channel's), none when they are exempt. The sums come from the ``usage`` table in one
query for those few keys (:meth:`bot.store.usage.UsageLog.spent_of`), so they are what every
replica recorded, the calls of turns still running excepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import Settings
from bot.store import Store
from bot.store.usage import Spent, UsageScope, scope_key
from bot.turn import TurnIdentity
from bot.usage.budgets import OWNERS, BudgetRules, Metric
from bot.usage.windows import BudgetCalendar, Period


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetLeft:
    """One limit of one budget: whose (``owner``, as the budget notice words it), per day
    or month, of tokens or cost; how much of it was used, and when it resets."""

    owner: str
    period: Period
    metric: Metric
    used: float
    amount: float
    resets: str

    @property
    def left(self) -> float:
        return max(self.amount - self.used, 0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """What ``/usage`` tells one person (see the module doc)."""

    channel: str
    zone: str
    today: Spent
    priced: bool
    exempt: bool
    budgets: tuple[BudgetLeft, ...]


def _nothing(scope: UsageScope, key: str) -> Spent:
    return Spent(scope=scope, key=key, day_tokens=0, day_cost=0.0, month_tokens=0, month_cost=0.0)


async def standing(settings: Settings, store: Store, turn: TurnIdentity, *, now: float) -> Standing:
    """The standing of ``turn``'s sender in ``turn``'s conversation and agent at ``now``."""
    envelope = turn.envelope
    rules = BudgetRules(settings.budgets, settings.channels)
    day, month = BudgetCalendar(settings.budgets.time_zone).windows(now)
    own = (
        UsageScope.USER,
        scope_key(
            UsageScope.USER,
            channel=turn.channel,
            conversation_id=envelope.conversation_id,
            user_id=envelope.sender.id,
            agent=envelope.agent,
        ),
    )
    held = rules.for_turn(turn, rules.keys(turn, agent=envelope.agent), agent=envelope.agent)
    keys = list(dict.fromkeys([own, *((scope, key) for scope, key, _ in held)]))
    found = await store.usage.spent_of(keys, day_start=day.start, month_start=month.start)
    sums = {(s.scope, s.key): s for s in found}
    budgets: list[BudgetLeft] = []
    for scope, key, limits in held:
        spent = sums.get((scope, key)) or _nothing(scope, key)
        values = (spent.day_tokens, spent.day_cost, spent.month_tokens, spent.month_cost)
        for limit in limits:
            window = day if limit.period is Period.DAY else month
            budgets.append(
                BudgetLeft(
                    owner=OWNERS[scope],
                    period=limit.period,
                    metric=limit.metric,
                    used=float(values[limit.index]),
                    amount=limit.amount,
                    resets=window.resets,
                )
            )
    return Standing(
        channel=turn.channel,
        zone=settings.budgets.time_zone,
        today=sums.get(own) or _nothing(*own),
        priced=bool(settings.pricing),
        exempt=rules.exempt(turn),
        budgets=tuple(budgets),
    )


def _amount(metric: Metric, value: float) -> str:
    return f"{value:,.0f} tokens" if metric is Metric.TOKENS else f"{value:,.4f}"


def usage_text(shown: Standing) -> str:
    """``/usage``'s answer."""
    spent = shown.today

    def line(label: str, tokens: int, cost: float) -> str:
        priced = f", cost {cost:,.4f}" if shown.priced else ""
        return f"• {label}: {tokens:,} tokens{priced}"

    lines = [
        f"Your model usage on {shown.channel} ({shown.zone}):",
        line("today", spent.day_tokens, spent.day_cost),
        line("this month", spent.month_tokens, spent.month_cost),
    ]
    if shown.exempt:
        lines.append("No budget stops you (budgets.budget_exempt); your calls still count.")
    elif not shown.budgets:
        lines.append("No budget applies to you here.")
    else:
        lines.append("Budgets that apply to you here:")
        for budget in shown.budgets:
            what = "tokens" if budget.metric is Metric.TOKENS else "cost"
            lines.append(
                f"• {budget.owner} {budget.period.adjective} {what}: "
                f"{_amount(budget.metric, budget.left)} left of "
                f"{_amount(budget.metric, budget.amount)} (resets {budget.resets})"
            )
    return "\n".join(lines)
