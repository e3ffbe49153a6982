"""The approval policy: which calls run, which are refused, which need a person.

Decision order (first match wins), per channel alias and agent after applying their
overrides (``[approval]``, then the channel's ``approval`` table, then the agent's
``[agents.<name>.approval]``: the agent is chosen per conversation, the narrowest of the three):

1. ``deny`` list → DENY (even under ``full``)
2. level ``readonly`` → DENY for a side-effecting call
3. a ``quorum`` rule (:mod:`bot.approval.quorum`) → ASK N distinct approvers (even under
   ``full``; beats ``always_ask``, grants unless ``grants_satisfy``, ``auto_approve``)
4. level ``full`` → ALLOW
5. ``always_ask`` → ASK (beats grants and ``auto_approve``)
6. an active grant for the tool in this conversation / channel / globally → ALLOW
7. ``auto_approve`` → ALLOW
8. a call whose tool does not require approval (read-only) → ALLOW
9. otherwise → ASK

Grants are looked up (a database read) only when they can change the outcome: a call that
step 7 or 8 allows anyway is allowed with that reason without reading them.

List entries are tool names or shell-style patterns (``mcp_github_*``). The policy reads the
tool name, the ``requires_approval`` flag, and only for a quorum rule's argument patterns the
arguments (already stripped of any ``approved`` marker the model wrote, which therefore
changes nothing).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal, TypeVar

from bot.approval.gate import ApprovalRequest, Assessment, PolicyResult
from bot.approval.quorum import quorum_for
from bot.approval.reasons import PolicyReason
from bot.channel_config import (
    ApprovalLevel,
    GrantChoice,
    GrantScope,
    NameApprovers,
    QuorumConfig,
    ReminderOverride,
    ToolApproval,
)
from bot.config import DEFAULT_AGENT, AgentApproval, ApprovalConfig, ChannelCommon, Settings
from bot.envelope import ChannelRef
from bot.store.grants import GrantRecord

GrantLookup = Callable[[], Awaitable[GrantRecord | None]]
_T = TypeVar("_T")
#: The tables a setting can come from: ``[approval]``, the channel's ``approval`` table, the
#: agent's ``[agents.<name>.approval]``.
Layer = Literal["approval", "channel", "agent"]
FROM_APPROVAL: Layer = "approval"
FROM_CHANNEL: Layer = "channel"
FROM_AGENT: Layer = "agent"


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectivePolicy:
    """The approval settings that apply on one channel alias (global merged with overrides)."""

    level: ApprovalLevel
    auto_approve: tuple[str, ...]
    always_ask: tuple[str, ...]
    deny: tuple[str, ...]
    self_approval: bool
    timeout_s: float
    grant_scope: GrantScope
    grant_ttl_s: float | None
    dm_approvers: bool
    approvers: tuple[str, ...]
    approver_roles: tuple[str, ...]
    #: Reminders and escalation of an unanswered card (:mod:`bot.approval.reminders`): None
    #: is off.
    remind_after_s: float | None = None
    remind_max: int = 3
    escalate_after_s: float | None = None
    escalate_to: tuple[str, ...] = ()
    escalate_to_roles: tuple[str, ...] = ()
    #: Whom a card names as able to approve (``approval.name_approvers``).
    name_approvers: NameApprovers = "members"
    #: An approver's time zone by user id (a reminder says the expiry in it).
    approver_zones: tuple[tuple[str, str], ...] = ()
    #: The sizes of yes a card may offer (``grant_choices``, the narrowest table's; each
    #: still bounded per tool: :mod:`bot.approval.grant_choices`).
    grant_choices: tuple[GrantChoice, ...] = ()
    #: The calls that need several approvers (``[approval.quorum]`` or an override's).
    quorum: QuorumConfig = field(default_factory=QuorumConfig)
    #: How long a turn waits on a card before it parks (at most ``timeout_s``), and whether
    #: it parks at all (docs/approvals.md, "Parking and resumption").
    wait_in_turn_s: float = 300.0
    park: bool = True
    #: Which table set each of ``level``, ``auto_approve``, ``always_ask``, ``deny``,
    #: ``self_approval`` and ``quorum``: :data:`FROM_APPROVAL`, :data:`FROM_CHANNEL` or
    #: :data:`FROM_AGENT`
    #: (``hatchway policy explain`` names the table).
    sources: tuple[tuple[str, Layer], ...] = field(default=(), compare=False)

    @property
    def has_approvers(self) -> bool:
        return bool(self.approvers or self.approver_roles)

    def source(self, key: str) -> Layer:
        """The table that set ``key`` (``[approval]`` when no override did)."""
        return dict(self.sources).get(key, FROM_APPROVAL)


@functools.lru_cache(maxsize=4096)
def matches(tool: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``tool`` is one of ``patterns`` (names or shell-style patterns); asked several
    times per tool call with the same few lists, hence remembered."""
    return first_match(tool, patterns) is not None


def first_match(tool: str, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` that ``tool`` matches (None: none does): the entry a
    decision names."""
    return next((p for p in patterns if tool == p or fnmatchcase(tool, p)), None)


def _pick(
    key: str, agent: _T | None, channel: _T | None, base: _T, sources: list[tuple[str, Layer]]
) -> _T:
    """The narrowest of the three tables that sets ``key``; ``sources`` notes which."""
    if agent is not None:
        sources.append((key, FROM_AGENT))
        return agent
    if channel is not None:
        sources.append((key, FROM_CHANNEL))
        return channel
    sources.append((key, FROM_APPROVAL))
    return base


def tool_entry(tables: Mapping[str, ToolApproval], tool: str | None) -> ToolApproval | None:
    """The entry of a ``tools`` table that applies to ``tool``: its own name's, else the
    first pattern (in file order) it matches; None when none does."""
    if tool is None or not tables:
        return None
    if tool in tables:
        return tables[tool]
    pattern = first_match(tool, tuple(tables))
    return None if pattern is None else tables[pattern]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Schedule:
    timeout_s: float
    remind_after_s: float | None
    remind_max: int
    escalate_after_s: float | None
    escalate_to: tuple[str, ...]
    escalate_to_roles: tuple[str, ...]


def _schedule(
    base: ApprovalConfig,
    channel: ReminderOverride | None,
    agent: AgentApproval,
    tool: str | None,
) -> _Schedule:
    """The card's life and reminder schedule of a call of ``tool``: per key, the first table
    that sets it of the agent's entry for the tool, the agent's table, the channel's,
    ``[approval]``'s entry for the tool, ``[approval]`` (the narrowest wins, as for the other
    keys)."""
    layers: list[ReminderOverride] = [
        t
        for t in (tool_entry(agent.tools, tool), agent, channel, tool_entry(base.tools, tool))
        if t is not None
    ]
    return _Schedule(
        timeout_s=_first((t.timeout_s for t in layers), base.timeout_s),
        remind_after_s=_first((t.remind_after_s for t in layers), base.remind_after_s),
        remind_max=_first((t.remind_max for t in layers), base.remind_max),
        escalate_after_s=_first((t.escalate_after_s for t in layers), base.escalate_after_s),
        escalate_to=tuple(_first((t.escalate_to for t in layers), base.escalate_to)),
        escalate_to_roles=tuple(
            _first((t.escalate_to_roles for t in layers), base.escalate_to_roles)
        ),
    )


def _first(values: Iterable[_T | None], default: _T) -> _T:
    """The first of ``values`` that is set, else ``default``."""
    return next((v for v in values if v is not None), default)


def effective_policy(
    base: ApprovalConfig,
    channel: ChannelCommon | None,
    agent: AgentApproval | None = None,
    tool: str | None = None,
) -> EffectivePolicy:
    """Merge the global ``[approval]`` table with a channel's ``approval`` overrides, and
    those with an agent's; ``tool``: with the card's life and reminder schedule of that
    tool's entries."""
    o = channel.approval if channel is not None else None
    a = agent if agent is not None else AgentApproval()
    sources: list[tuple[str, Layer]] = []
    schedule = _schedule(base, o, a, tool)

    return EffectivePolicy(
        level=_pick("level", a.level, o.level if o else None, base.level, sources),
        auto_approve=tuple(
            _pick(
                "auto_approve",
                a.auto_approve,
                o.auto_approve if o else None,
                base.auto_approve,
                sources,
            )
        ),
        always_ask=tuple(
            _pick("always_ask", a.always_ask, o.always_ask if o else None, base.always_ask, sources)
        ),
        deny=tuple(_pick("deny", a.deny, o.deny if o else None, base.deny, sources)),
        self_approval=_pick(
            "self_approval", None, o.self_approval if o else None, base.self_approval, sources
        ),
        timeout_s=schedule.timeout_s,
        grant_scope=base.grant_scope,
        grant_ttl_s=base.grant_ttl_s,
        dm_approvers=base.dm_approvers,
        approvers=tuple(channel.approvers) if channel else (),
        approver_roles=tuple(channel.approver_roles) if channel else (),
        remind_after_s=schedule.remind_after_s,
        remind_max=schedule.remind_max,
        escalate_after_s=schedule.escalate_after_s,
        escalate_to=schedule.escalate_to,
        escalate_to_roles=schedule.escalate_to_roles,
        name_approvers=base.name_approvers,
        approver_zones=tuple(sorted(base.approver_zones.items())),
        grant_choices=tuple(
            _pick(
                "grant_choices",
                a.grant_choices,
                o.grant_choices if o else None,
                base.grant_choices,
                sources,
            )
        ),
        quorum=_pick("quorum", a.quorum, o.quorum if o else None, base.quorum, sources),
        wait_in_turn_s=min(base.wait_in_turn_s, schedule.timeout_s),
        park=base.park,
        sources=tuple(sources),
    )


class ApprovalPolicy:
    """Evaluates the decision order for a request; owns no state besides the settings."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        # merged once per channel alias and agent (settings are immutable; a reload starts
        # afresh)
        self._merged: dict[tuple[ChannelRef, str, str | None], EffectivePolicy] = {}

    def update_settings(self, settings: Settings) -> None:
        """Swap in reloaded settings (SIGHUP); later evaluations use them."""
        self._settings = settings
        self._merged = {}

    def schedules_reminders(self) -> bool:
        """Whether a reminder or an escalation is configured anywhere (``[approval]``, a
        channel's ``approval`` table, an agent's, or a tool's entry in one of them): when none
        is, the reminder sweep has nothing to read."""
        base = self._settings.approval
        tables: list[ReminderOverride] = [*base.tools.values()]
        tables += [c.approval for _, _, c in self._settings.channels.all()]
        for profile in self._settings.agents.values():
            tables += [profile.approval, *profile.approval.tools.values()]
        if base.remind_after_s is not None or base.escalate_after_s is not None:
            return True
        return any(t.remind_after_s is not None or t.escalate_after_s is not None for t in tables)

    def for_channel(
        self, ref: ChannelRef, agent: str = DEFAULT_AGENT, tool: str | None = None
    ) -> EffectivePolicy:
        """The policy on channel alias ``ref`` for ``agent``; with ``tool``, its card's life
        and reminder schedule are that tool's (the ``tools`` entries of ``[approval]`` and
        the agent's)."""
        key = (ref, agent, tool)
        merged = self._merged.get(key)
        if merged is None:
            profile = self._settings.agents.get(agent)
            merged = effective_policy(
                self._settings.approval,
                self._settings.channels.get(ref.kind, ref.alias),
                None if profile is None else profile.approval,
                tool,
            )
            self._merged[key] = merged
        return merged

    async def evaluate(self, request: ApprovalRequest, grant: GrantLookup) -> PolicyResult:
        """Apply the decision order. ``grant`` is awaited only when step 6 is reached and
        steps 7 and 8 would not allow the call anyway, or for a quorum rule whose
        ``grants_satisfy`` is on."""
        envelope = request.turn.envelope
        policy = self.for_channel(envelope.channel, envelope.agent)
        tool = request.tool
        if matches(tool, policy.deny):
            return PolicyResult(assessment=Assessment.DENY, reason=PolicyReason.DENY_LIST)
        if policy.level == "readonly" and request.requires_approval:
            return PolicyResult(assessment=Assessment.DENY, reason=PolicyReason.READONLY_LEVEL)
        if policy.quorum.rules:
            need = quorum_for(policy.quorum, tool, request.arguments)
            if need is not None:
                found = await grant() if policy.quorum.grants_satisfy else None
                if found is not None:
                    return PolicyResult(
                        assessment=Assessment.ALLOW, reason=PolicyReason.GRANT, grant_id=found.id
                    )
                return PolicyResult(
                    assessment=Assessment.ASK, reason=PolicyReason.QUORUM, quorum=need.approvals
                )
        if policy.level == "full":
            return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.FULL_LEVEL)
        if matches(tool, policy.always_ask):
            return PolicyResult(assessment=Assessment.ASK, reason=PolicyReason.ALWAYS_ASK)
        if matches(tool, policy.auto_approve):
            return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.AUTO_APPROVE)
        if not request.requires_approval:
            return PolicyResult(assessment=Assessment.ALLOW, reason=PolicyReason.READ_ONLY_TOOL)
        # only here can a grant change the outcome (ASK → ALLOW)
        found = await grant()
        if found is not None:
            return PolicyResult(
                assessment=Assessment.ALLOW, reason=PolicyReason.GRANT, grant_id=found.id
            )
        return PolicyResult(assessment=Assessment.ASK, reason=PolicyReason.SIDE_EFFECTS)
