"""``[budgets]`` as rules: which budgets a turn is held to, and who is never stopped.

A turn is held to the budgets of its sender (``per_user``), its conversation
(``per_conversation``), its agent (``agents.<name>``) and its channel
(``channels."<kind.alias>"``), each a set of limits of tokens or cost per day or month
(:class:`Limit`). A scheduled run is held to them as its creator's message in its
conversation, under the agent that conversation routes to. A sender listed in
``budget_exempt`` (or, with ``"approvers"`` there, an approver of the message's channel: by
id, or by one of its ``approver_roles`` that the platform said the sender holds,
:attr:`bot.envelope.Sender.roles`) is held to none; their calls are still recorded and
count against everyone else's budgets. A scheduled run carries no roles: its creator counts
as an approver there only by id.

The limits of each table are worked out once per configuration; a turn only names its keys
(:meth:`BudgetRules.for_turn`), which keeps the check a few lookups.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.config import BudgetLimits, BudgetsConfig, ChannelCommon, ChannelsConfig
from bot.config.usage import APPROVERS
from bot.store.usage import UsageScope, scope_key
from bot.turn import TurnIdentity
from bot.usage.windows import Period

#: How the notice names whose budget is used up.
OWNERS = {
    UsageScope.USER: "Your",
    UsageScope.CONVERSATION: "This conversation's",
    UsageScope.AGENT: "This assistant's",
    UsageScope.CHANNEL: "This channel's",
}

#: A turn's key in each scope the ledger sums, in :attr:`BudgetRules.scopes` order.
ScopeKeys = tuple[tuple[UsageScope, str], ...]


class Metric(enum.StrEnum):
    TOKENS = "tokens"
    COST = "cost"


@dataclass(frozen=True, slots=True)
class Limit:
    """At most ``amount`` tokens or cost per ``period``. ``index`` is where the ledger keeps
    that sum (:data:`bot.usage.ledger.Sums`)."""

    period: Period
    metric: Metric
    amount: float
    index: int


@dataclass(frozen=True, slots=True)
class Budget:
    """One limit of one scope key; ``name`` identifies its window in ``budget_notices``."""

    scope: UsageScope
    key: str
    limit: Limit

    @property
    def name(self) -> str:
        return f"{self.scope.value}:{self.key}:{self.limit.period.value}"


#: What one scope key of a turn is held to.
Held = tuple[UsageScope, str, tuple[Limit, ...]]


def limits_of(table: BudgetLimits) -> tuple[Limit, ...]:
    """A table's limits, in the ledger's order: day tokens, day cost, month tokens, cost."""
    found: list[Limit] = []
    for index, (period, metric, amount) in enumerate(
        (
            (Period.DAY, Metric.TOKENS, table.daily_tokens),
            (Period.DAY, Metric.COST, table.daily_cost),
            (Period.MONTH, Metric.TOKENS, table.monthly_tokens),
            (Period.MONTH, Metric.COST, table.monthly_cost),
        )
    ):
        if amount is not None:
            found.append(Limit(period=period, metric=metric, amount=float(amount), index=index))
    return tuple(found)


class BudgetRules:
    """The budgets of a configuration (``[budgets]`` and the channels' approvers)."""

    def __init__(self, config: BudgetsConfig, channels: ChannelsConfig) -> None:
        self.config = config
        self._per_user = limits_of(config.per_user)
        self._per_conversation = limits_of(config.per_conversation)
        self._agents = {name: limits_of(t) for name, t in config.agents.items() if not t.empty}
        self._channels = {name: limits_of(t) for name, t in config.channels.items() if not t.empty}
        scopes: list[UsageScope] = []
        if self._per_user:
            scopes.append(UsageScope.USER)
        if self._per_conversation:
            scopes.append(UsageScope.CONVERSATION)
        if self._agents:
            scopes.append(UsageScope.AGENT)
        if self._channels:
            scopes.append(UsageScope.CHANNEL)
        #: The scopes some budget counts in (what the ledger keeps sums of).
        self.scopes: tuple[UsageScope, ...] = tuple(scopes)
        tables = [self._per_user, self._per_conversation]
        tables += [*self._agents.values(), *self._channels.values()]
        #: Whether any budget is monthly (the ledger then sums the whole month).
        self.monthly = any(limit.period is Period.MONTH for t in tables for limit in t)
        exempt = set(config.budget_exempt)
        self._exempt = frozenset(exempt - {APPROVERS})
        self._approvers: dict[str, ChannelCommon] = {}
        if APPROVERS in exempt:
            self._approvers = {f"{kind}.{alias}": cfg for kind, alias, cfg in channels.all()}

    def exempt(self, turn: TurnIdentity) -> bool:
        """Whether the turn's sender is never stopped by a budget: listed by id, or (with
        ``"approvers"``) an approver of the channel by id or by a role their message carried."""
        sender = turn.envelope.sender
        if sender.id in self._exempt:
            return True
        channel = self._approvers.get(turn.channel)
        return channel is not None and channel.is_approver(sender)

    def keys(self, turn: TurnIdentity, *, agent: str) -> ScopeKeys:
        """The turn's key in each scope some budget counts in."""
        envelope, channel = turn.envelope, turn.channel
        return tuple(
            (
                scope,
                scope_key(
                    scope,
                    channel=channel,
                    conversation_id=envelope.conversation_id,
                    user_id=envelope.sender.id,
                    agent=agent,
                ),
            )
            for scope in self.scopes
        )

    def for_turn(self, turn: TurnIdentity, keys: ScopeKeys, *, agent: str) -> tuple[Held, ...]:
        """What ``turn`` of ``agent`` is held to, by its ``keys`` (nothing when exempt)."""
        if not keys or self.exempt(turn):
            return ()
        held: list[Held] = []
        for scope, key in keys:
            if scope is UsageScope.USER:
                limits = self._per_user
            elif scope is UsageScope.CONVERSATION:
                limits = self._per_conversation
            elif scope is UsageScope.AGENT:
                limits = self._agents.get(agent, ())
            else:
                limits = self._channels.get(key, ())  # a channel's key is its name
            if limits:
                held.append((scope, key, limits))
        return tuple(held)
