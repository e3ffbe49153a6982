"""``[budgets]`` as rules: which budgets a turn is held to, and who is never stopped.

A turn is held to the budgets of its sender (``per_user``), its conversation
(``per_conversation``), its agent (``agents.<name>``) and its channel
(``channels."<kind.alias>"``), each a limit of tokens or cost per day or month
(:class:`Budget`). A scheduled run is held to them as its creator's message in its
conversation, under the agent that conversation routes to. A sender listed in
``budget_exempt`` (or, with ``"approvers"`` there, an approver of the message's channel) is
held to none; their calls are still recorded and count against everyone else's budgets.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.config import BudgetLimits, BudgetsConfig, ChannelsConfig
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


class Metric(enum.StrEnum):
    TOKENS = "tokens"
    COST = "cost"


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """One limit: ``limit`` tokens or cost per ``period`` for the calls of ``key`` in
    ``scope``. ``name`` identifies the budget's window in ``budget_notices``."""

    scope: UsageScope
    key: str
    period: Period
    metric: Metric
    limit: float

    @property
    def name(self) -> str:
        return f"{self.scope.value}:{self.key}:{self.period.value}"


def _limits(scope: UsageScope, key: str, limits: BudgetLimits) -> list[Budget]:
    found: list[Budget] = []
    for period, metric, limit in (
        (Period.DAY, Metric.TOKENS, limits.daily_tokens),
        (Period.MONTH, Metric.TOKENS, limits.monthly_tokens),
        (Period.DAY, Metric.COST, limits.daily_cost),
        (Period.MONTH, Metric.COST, limits.monthly_cost),
    ):
        if limit is not None:
            found.append(
                Budget(scope=scope, key=key, period=period, metric=metric, limit=float(limit))
            )
    return found


class BudgetRules:
    """The budgets of a configuration (``[budgets]`` and the channels' approvers)."""

    def __init__(self, config: BudgetsConfig, channels: ChannelsConfig) -> None:
        self.config = config
        self._per_user = None if config.per_user.empty else config.per_user
        self._per_conversation = None if config.per_conversation.empty else config.per_conversation
        self._agents = {name: lim for name, lim in config.agents.items() if not lim.empty}
        self._channels = {name: lim for name, lim in config.channels.items() if not lim.empty}
        scopes = []
        if self._per_user is not None:
            scopes.append(UsageScope.USER)
        if self._per_conversation is not None:
            scopes.append(UsageScope.CONVERSATION)
        if self._agents:
            scopes.append(UsageScope.AGENT)
        if self._channels:
            scopes.append(UsageScope.CHANNEL)
        #: The scopes some budget counts in (what the ledger keeps sums of).
        self.scopes: tuple[UsageScope, ...] = tuple(scopes)
        tables = [self._per_user, self._per_conversation, *self._agents.values()]
        #: Whether any budget is monthly (the ledger then sums the whole month).
        self.monthly = any(t is not None and t.monthly for t in tables) or any(
            t.monthly for t in self._channels.values()
        )
        exempt = set(config.budget_exempt)
        self._exempt = frozenset(exempt - {APPROVERS})
        self._approvers: dict[str, frozenset[str]] = {}
        if APPROVERS in exempt:
            self._approvers = {
                f"{kind}.{alias}": frozenset(cfg.approvers) for kind, alias, cfg in channels.all()
            }

    def exempt(self, turn: TurnIdentity) -> bool:
        """Whether the turn's sender is never stopped by a budget."""
        sender = turn.envelope.sender.id
        if sender in self._exempt:
            return True
        return sender in self._approvers.get(turn.channel, ())

    def for_turn(self, turn: TurnIdentity, *, agent: str) -> tuple[Budget, ...]:
        """The budgets ``turn`` of ``agent`` is held to (none for an exempt sender)."""
        if not self.scopes or self.exempt(turn):
            return ()
        envelope, channel = turn.envelope, turn.channel
        budgets: list[Budget] = []
        tables = (
            (UsageScope.USER, self._per_user),
            (UsageScope.CONVERSATION, self._per_conversation),
            (UsageScope.AGENT, self._agents.get(agent)),
            (UsageScope.CHANNEL, self._channels.get(channel)),
        )
        for scope, limits in tables:
            if limits is None:
                continue
            key = scope_key(
                scope,
                channel=channel,
                conversation_id=envelope.conversation_id,
                user_id=envelope.sender.id,
                agent=agent,
            )
            budgets += _limits(scope, key, limits)
        return tuple(budgets)
