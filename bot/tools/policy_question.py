"""A question to the approval policy — would this call run, be asked about, or be refused? —
put the way the pipeline would put the call, and answered by :mod:`bot.approval.explain`.

One engine for every place that asks: ``hatchway policy explain`` (:mod:`bot.commands.
policy`), the console's *Explain* page (:mod:`bot.webconsole.pages_explain`) and ``hatchway
doctor``'s approval warnings (:mod:`bot.approval.findings` reads :attr:`Explanation.
refused_at_once <bot.approval.explain.Explanation>`). :func:`imagined_envelope` builds the
message the question imagines, routed as the gateway routes it; :func:`ask` builds the call
from the tool catalog as :mod:`bot.tools.authorization` does (the tool's own per-call check,
the delivery defaults, the ``approved`` marker stripped, the argument schema), evaluates it
with the policy the daemon runs and, for an ask, previews it as the pipeline does before a
card (a file change's diff; a path the tool refuses before any card). :func:`report` is the
plain-text answer the command prints.

A question that cannot be answered (unknown channel, agent or tool; arguments that are not a
JSON object or do not fit the tool's schema) gets a :class:`Unanswerable` with one clear
sentence, never an exception.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.approval.explain import Explanation, explain
from bot.approval.policy import ApprovalPolicy
from bot.approval.question import CALL_ID, Unanswerable, imagined_envelope
from bot.channel import Channel
from bot.config import Settings
from bot.envelope import IngressEnvelope
from bot.store import Store
from bot.tools.authorization import approval_request, previewed, strip_marker
from bot.tools.delivery import with_delivery_defaults
from bot.tools.outcome import OutcomeReason, ToolOutcome
from bot.tools.registry import ToolRegistry
from bot.tools.spec import ToolContext, ToolSpec
from bot.tools.validation import resolve
from bot.turn import TurnIdentity
from bot.visible_text import visible

#: The longest arguments text a question may carry (a card shows no more than this anyway).
MAX_ARGUMENTS_CHARS = 100_000
__all__ = [
    "PolicyAnswer",
    "Unanswerable",
    "approver_lines",
    "ask",
    "imagined_envelope",
    "parsed_arguments",
    "report",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyAnswer:
    """The verdict on one imagined call: the explanation, or the tool's own refusal before
    any card (``refused_before_card``, its reason)."""

    envelope: IngressEnvelope
    tool: str
    side_effects: bool
    explanation: Explanation
    refused_before_card: str = ""

    @property
    def verdict(self) -> str:
        return "refuse" if self.refused_before_card else self.explanation.verdict


def parsed_arguments(text: str) -> dict[str, object] | Unanswerable:
    """The arguments of the question, or what is wrong with them."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        return Unanswerable(
            message=f"the arguments are too long ({len(text):,} characters; at most "
            f"{MAX_ARGUMENTS_CHARS:,})"
        )
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        return Unanswerable(message=f"the arguments are not JSON: {visible(str(exc))}")
    if not isinstance(parsed, dict):
        return Unanswerable(
            message='the arguments must be a JSON object, e.g. \'{"command": "ls"}\''
        )
    return parsed


async def ask(
    envelope: IngressEnvelope,
    tool: str,
    arguments: str,
    *,
    settings: Settings,
    store: Store,
    specs: Sequence[ToolSpec],
    channel: Channel | None = None,
    clock: Callable[[], float] = time.time,
    mcp_known: bool = False,
) -> PolicyAnswer | Unanswerable:
    """The policy's verdict on ``tool`` called with ``arguments`` (JSON text) in
    ``envelope``'s conversation, judged over ``store`` (its grants). ``specs`` is the tool
    catalog (``mcp_known``: it holds the MCP servers' tools too, as in the daemon)."""
    parsed = parsed_arguments(arguments)
    if isinstance(parsed, Unanswerable):
        return parsed
    registry = ToolRegistry(specs)
    found = resolve(registry.executor(), call_id=CALL_ID, name=tool, arguments=parsed)
    if isinstance(found, ToolOutcome):
        said = visible(found.observation)
        if found.reason is OutcomeReason.UNKNOWN_TOOL:
            known = ", ".join(sorted(s.name for s in registry.specs))
            if not mcp_known:
                said += " (MCP tools are known only to the running daemon; the built-in tools"
                said += f" here: {known})"
            else:
                said += f" (the tools: {known})"
        return Unanswerable(message=said)
    spec = found.spec
    turn = TurnIdentity(
        turn_id=CALL_ID,
        session_key=f"{envelope.channel}:{envelope.conversation_id}",
        envelope=envelope,
    )
    call = strip_marker(with_delivery_defaults(spec, parsed, envelope))
    context = ToolContext(turn=turn)
    request = approval_request(context, spec, call_id=CALL_ID, arguments=call)
    policy = ApprovalPolicy(settings)
    answer = await explain(policy, store, request, clock=clock, channel=channel)
    refused = ""
    if answer.verdict == "ask":
        # what the card would show of the change (a file's diff), as the pipeline asks
        asked = await previewed(request, spec, call, context)
        if isinstance(asked, str):
            refused = visible(asked)
        else:
            answer = await explain(policy, store, asked, clock=clock, channel=channel)
    return PolicyAnswer(
        envelope=envelope,
        tool=spec.name,
        side_effects=request.requires_approval,
        explanation=answer,
        refused_before_card=refused,
    )


def report(answer: PolicyAnswer) -> str:
    """The answer as ``hatchway policy explain`` prints it."""
    if answer.refused_before_card:
        return (
            "decision:  refuse\nrule:      before any card, the tool says: "
            f"{answer.refused_before_card}"
        )
    found, envelope = answer.explanation, answer.envelope
    route = envelope.route or "the default"
    needs = "needs approval" if answer.side_effects else "read-only"
    lines = [
        f"decision:  {found.decision}",
        f"rule:      {found.rule}",
        f"tool:      {answer.tool} ({needs} for this call)",
        f"channel:   {envelope.channel}, conversation {visible(envelope.conversation_id)}"
        f" ({'direct message' if envelope.is_direct else 'group'})",
        f"agent:     {envelope.agent} ({route})",
        f"level:     {found.level}",
    ]
    if found.verdict == "ask":
        lines.append("approvers: " + "\n           ".join(approver_lines(found) or ["none"]))
        lines.append(f"asked:     {found.asked}")
    lines.append("card:" + (" (cut: approvable only from the full view)" if found.card_cut else ""))
    lines += [f"  {line}" for line in found.card]
    return "\n".join(lines)


def approver_lines(found: Explanation) -> list[str]:
    """Who could answer, one line each: a listed approver and whether they can see the
    conversation, a listed approver who does not count, the roles found at click time."""
    reach = [f"{visible(a.approver)}: sees the conversation: {a.sees}" for a in found.approvers]
    reach += [f"{visible(who)}: not counted" for who in found.not_counted]
    if found.approver_roles:
        reach.append(f"holders of roles {', '.join(found.approver_roles)} (found at click time)")
    return reach
