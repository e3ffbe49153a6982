"""Configurations under which an approval can never succeed, found before anyone asks.

``hatchway doctor`` prints each finding as a warning and the daemon logs each one at start-up
(``approval_config_warning``), so a team does not learn from a refused call that its
approvers cannot answer.

The findings are not a second copy of the rules: each is the verdict of
:func:`bot.approval.explain.explain` — the engine of ``hatchway policy explain``, which runs
the policy the pipeline runs and the runtime's way of asking — on imagined requests. Per
enabled channel alias and per agent that can answer there (its approval table may set the
level or the lists: :func:`~bot.approval.question.agents_on`), a side-effecting call is
imagined from each person who may talk there (``allowed_users``; anyone else when it holds
``"*"`` or strangers can pair), once in a group and once in a direct message (where the
channel takes them). When the engine says every such request in groups, or in direct
messages, would be refused at once (:attr:`~bot.approval.explain.Explanation.
refused_at_once`), that is a finding:

* nobody can approve (``no approver configured``): no ``approvers`` and no
  ``approver_roles``;
* nobody who could approve can see the request (``no approver reachable``): in groups, the
  only people who may talk are the only approvers and ``self_approval`` is off (README's
  one-person setup without it); in direct messages, a DM's card is seen by its requester
  alone, who may not approve it, and no copy goes to another approver's DM.

Offline, whether a particular group has an approver in it is not known: an approver counts
there, as the runtime counts one the platform cannot tell about (:mod:`bot.approval.reach`
decides per message). The console channel asks whoever is at the terminal: its findings are
the approval keys it ignores (``approvers``, ``approver_roles``, ``reactions_for_approval``).
Slack's ``approver_roles`` is refused when the config is loaded.

An escalation that can never happen is a finding too (:func:`_escalations`): an
``escalate_after_s`` that applies (for any tool, per the schedule's precedence) with nobody in
``escalate_to`` or ``escalate_to_roles``, or ``escalate_to_roles`` on Slack, whose clicks
carry no roles.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.approval.explain import explain
from bot.approval.gate import ApprovalRequest
from bot.approval.policy import ApprovalPolicy
from bot.approval.question import CALL_ID, agents_on, imagined_envelope
from bot.approval.reasons import RuntimeReason
from bot.config import DEFAULT_AGENT, ChannelCommon, Settings
from bot.envelope import ChannelRef, IngressEnvelope
from bot.turn import TurnIdentity

#: The call imagined: a tool with side effects that no list names.
IMAGINED_TOOL = "a side-effecting tool"
#: The requester imagined when anyone may talk (``"*"``, pairing): nobody listed.
SOMEONE = "someone"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    channel: str  # kind.alias
    problem: str
    fix: str


async def approval_findings(settings: Settings) -> list[Finding]:
    """Every finding of the enabled channel aliases, in configuration order."""
    policy = ApprovalPolicy(settings)
    found: list[Finding] = []
    for kind, alias, cfg in settings.channels.all():
        if not cfg.enabled:
            continue
        if kind == "console":
            found += _console(kind, alias, cfg)
            continue
        for agent in agents_on(settings, kind, alias):
            finding = await _finding(settings, policy, kind, alias, cfg, agent)
            if finding is not None:
                found.append(finding)
            found += _escalations(settings, policy, kind, alias, agent)
    return found


def _escalations(
    settings: Settings, policy: ApprovalPolicy, kind: str, alias: str, agent: str
) -> list[Finding]:
    """The reminder schedules on this alias for ``agent`` (its own and each tool entry's)
    whose escalation can never reach anyone."""
    profile = settings.agents.get(agent)
    tools = [*settings.approval.tools, *(profile.approval.tools if profile else {})]
    ref = ChannelRef(kind=kind, alias=alias)
    found: list[Finding] = []
    for tool in dict.fromkeys([None, *tools]):
        schedule = policy.for_channel(ref, agent, tool)
        if schedule.escalate_after_s is None:
            continue
        where = f"{kind}.{alias}" + (f" (agent {agent})" if agent != DEFAULT_AGENT else "")
        which = f" for {tool}" if tool else ""
        if not (schedule.escalate_to or schedule.escalate_to_roles):
            problem = f"escalate_after_s is set{which} but escalate_to names nobody"
            fix = "set escalate_to (user ids) or escalate_to_roles beside escalate_after_s"
        elif kind == "slack" and schedule.escalate_to_roles:
            problem = f"escalate_to_roles{which} never match on Slack (a click carries no roles)"
            fix = "escalate to Slack user ids (escalate_to) instead"
        else:
            continue
        if all(f.problem != problem for f in found):
            found.append(Finding(channel=where, problem=problem, fix=fix))
    return found


def _console(kind: str, alias: str, cfg: ChannelCommon) -> list[Finding]:
    ignored = [
        key
        for key, value in (
            ("approvers", cfg.approvers),
            ("approver_roles", cfg.approver_roles),
            ("reactions_for_approval", cfg.reactions_for_approval),
        )
        if value
    ]
    if not ignored:
        return []
    return [
        Finding(
            channel=f"{kind}.{alias}",
            problem=f"{', '.join(ignored)} ignored: the console asks whoever is at the terminal",
            fix=f"remove {', '.join(ignored)} from channels.{kind}.{alias}",
        )
    ]


def _requesters(cfg: ChannelCommon, *, dm: bool) -> list[str]:
    """Who may ask there: the allowed users, and anyone else when ``"*"`` is among them (or,
    in direct messages, when strangers are answered or can pair)."""
    users = [u for u in cfg.allowed_users if u != "*"]
    strangers = "*" in cfg.allowed_users or (dm and cfg.dm_policy in ("open", "pairing"))
    if strangers or not users:
        users.append(SOMEONE)
    return users


async def _refused(policy: ApprovalPolicy, envelope: IngressEnvelope) -> RuntimeReason | None:
    """What the engine says of an imagined side-effecting call in ``envelope``: the reason
    it would be refused at once, or None (a person would be asked, or nothing is asked)."""
    turn = TurnIdentity(
        turn_id=CALL_ID,
        session_key=f"{envelope.channel}:{envelope.conversation_id}",
        envelope=envelope,
    )
    request = ApprovalRequest(
        tool=IMAGINED_TOOL,
        arguments={},
        call_id=CALL_ID,
        turn=turn,
        requires_approval=True,
    )
    answer = await explain(policy, None, request, clock=time.time)
    return answer.refused_at_once


async def _every(
    settings: Settings,
    policy: ApprovalPolicy,
    kind: str,
    alias: str,
    cfg: ChannelCommon,
    agent: str,
    *,
    dm: bool,
) -> RuntimeReason | None:
    """The reason every imagined requester's call (in a group, or in a DM) is refused at
    once, or None when at least one of them would be asked."""
    reasons: set[RuntimeReason] = set()
    for user in _requesters(cfg, dm=dm):
        envelope = imagined_envelope(
            settings,
            channel=f"{kind}.{alias}",
            conversation=user if dm else "a group",
            user=user,
            dm=dm,
            agent=agent,
        )
        assert isinstance(envelope, IngressEnvelope)  # the alias and agent are configured
        refused = await _refused(policy, envelope)
        if refused is None:
            return None  # this one would be asked
        reasons.add(refused)
    return min(reasons) if reasons else None


async def _finding(
    settings: Settings,
    policy: ApprovalPolicy,
    kind: str,
    alias: str,
    cfg: ChannelCommon,
    agent: str,
) -> Finding | None:
    name = f"{kind}.{alias}"
    key = f"channels.{name}"
    on = "" if agent == cfg.agent else f" (agent {agent})"
    groups = (
        await _every(settings, policy, kind, alias, cfg, agent, dm=False)
        if cfg.group_policy != "disabled"
        else None
    )
    dms = (
        await _every(settings, policy, kind, alias, cfg, agent, dm=True)
        if cfg.dm_policy != "disabled"
        else None
    )
    if RuntimeReason.NO_APPROVER in (groups, dms):
        return Finding(
            channel=name,
            problem=f"no approvers{on}: every call that needs approval is refused",
            fix=f"list approvers' user ids in {key}.approvers",
        )
    if groups is RuntimeReason.NOBODY_REACHABLE:
        return Finding(
            channel=name,
            problem=f"the only users are the only approvers and self_approval is off{on}: "
            "no request can ever be approved",
            fix=f"set {key}.approval.self_approval = true, or add another approver",
        )
    if dms is RuntimeReason.NOBODY_REACHABLE:
        return Finding(
            channel=name,
            problem=f"requests made in direct messages can never be approved{on} (only the "
            "requester sees a DM's card, and self_approval is off)",
            fix="set approval.dm_approvers = true (cards go to the approvers' DMs), "
            f"or {key}.approval.self_approval = true",
        )
    return None
