"""``hatchway policy explain``: would this call run, be asked about, or be refused, and why.

The call is built as the pipeline builds it (:mod:`bot.tools.authorization`: the tool's own
per-call check, the delivery defaults, the ``approved`` marker stripped) from the daemon's
tool catalog, and judged by the approval policy itself over the service's database (its
grants): :mod:`bot.approval.explain`. MCP tools are known only to a running daemon (their
servers say what they are), so they are unknown here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.operator import located, open_existing, quiet_logging
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.visible_text import visible

if TYPE_CHECKING:
    from bot.approval.explain import Explanation
    from bot.config import Settings
    from bot.store import Store
    from bot.tools.registry import ToolRegistry

#: The exit status of a question that cannot be answered (bad JSON, unknown tool or channel).
BAD_QUESTION = 2


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("policy", help="explain the approval policy")
    sub = parser.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    ask = sub.add_parser(
        "explain",
        help="say whether a tool call would run, be asked about or be refused, and which rule "
        "decides",
    )
    ask.add_argument("--channel", required=True, metavar="KIND.ALIAS", help="e.g. telegram.main")
    ask.add_argument("--conversation", required=True, metavar="ID", help="the conversation id")
    ask.add_argument("--user", required=True, metavar="ID", help="who asks (platform user id)")
    ask.add_argument("--thread", default=None, metavar="ID", help="a thread or topic id")
    ask.add_argument(
        "--role", action="append", default=[], metavar="NAME", help="a role the user holds"
    )
    ask.add_argument("--dm", action="store_true", help="the conversation is a direct message")
    ask.add_argument("--agent", default=None, help="the agent (default: as routing picks it)")
    ask.add_argument("tool", help="the tool's name")
    ask.add_argument("arguments", nargs="?", default="{}", help="the arguments, a JSON object")
    add_config_argument(ask)
    ask.set_defaults(handler=_explain)


def _envelope(args: argparse.Namespace, settings: Settings) -> IngressEnvelope | str:
    """The message the question imagines (routed as the gateway routes it), or what is
    wrong with the question."""
    kind, dot, alias = str(args.channel).partition(".")
    if not dot or settings.channels.get(kind, alias) is None:
        known = ", ".join(f"{k}.{a}" for k, a, _ in settings.channels.all()) or "none"
        return f"no channel {visible(args.channel)!r} in the configuration (configured: {known})"
    if args.agent is not None and args.agent not in settings.agents:
        return f"no agent {visible(args.agent)!r} in the configuration"
    ref = ChannelRef(kind=kind, alias=alias)
    envelope = IngressEnvelope(
        channel=ref,
        message_id="policy-explain",
        conversation_id=args.conversation,
        sender=Sender(id=args.user, display_name=args.user, roles=tuple(args.role)),
        text="",
        reply_target=DeliveryTarget(
            channel=ref, conversation_id=args.conversation, thread_id=args.thread
        ),
        thread_id=args.thread,
        is_direct=args.dm,
        is_group=not args.dm,
        addressed_to_bot=True,
        capabilities=Capabilities(
            terminal_prompt=kind == "console", approval_backchannel=kind != "console"
        ),
    )
    from bot.routing import Router

    envelope = Router(settings).routed(envelope)
    if args.agent is not None:
        envelope = dataclasses.replace(envelope, agent=args.agent, route="--agent")
    return envelope


def _arguments(text: str) -> dict[str, object] | str:
    """The arguments, or what is wrong with them."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"the arguments are not JSON: {exc}"
    if not isinstance(parsed, dict):
        return 'the arguments must be a JSON object, e.g. \'{"command": "ls"}\''
    return parsed


def _registry(settings: Settings, store: Store, config_file: Path | None) -> ToolRegistry:
    """The daemon's built-in tools as it would build them (no channel is running: the
    outbox posts nowhere, which no approval decision reads)."""
    from bot.outbox import ChannelOutbox
    from bot.schedules.book import ScheduleBook
    from bot.tools.registry import ToolRegistry
    from bot.wiring.tools import build_tools

    specs = build_tools(
        settings,
        store=store,
        outbox=ChannelOutbox(lambda: settings, lambda _ref: None),
        book=ScheduleBook(store.schedules),
        clock=time.time,
        config_file=config_file,
    )
    return ToolRegistry(specs)


async def _explain(args: argparse.Namespace) -> int:
    # the tools and the policy are imported by this command only, not by every ``hatchway``
    from bot.approval.explain import explain
    from bot.approval.policy import ApprovalPolicy
    from bot.tools.authorization import approval_request, previewed, strip_marker
    from bot.tools.delivery import with_delivery_defaults
    from bot.tools.outcome import OutcomeReason, ToolOutcome
    from bot.tools.spec import ToolContext
    from bot.tools.validation import resolve
    from bot.turn import TurnIdentity

    settings, location = located(args)
    quiet_logging(settings)
    envelope = _envelope(args, settings)
    if isinstance(envelope, str):
        print(f"hatchway: {envelope}")
        return BAD_QUESTION
    arguments = _arguments(args.arguments)
    if isinstance(arguments, str):
        print(f"hatchway: {arguments}")
        return BAD_QUESTION
    async with await open_existing(settings, location) as store:
        registry = _registry(settings, store, location.config_file)
        found = resolve(
            registry.executor(), call_id="policy-explain", name=args.tool, arguments=arguments
        )
        if isinstance(found, ToolOutcome):
            said = visible(found.observation)
            if found.reason is OutcomeReason.UNKNOWN_TOOL:
                known = ", ".join(sorted(s.name for s in registry.specs))
                said += (
                    " (MCP tools are known only to the running daemon; the built-in tools "
                    f"here: {known})"
                )
            print(f"hatchway: {said}")
            return BAD_QUESTION
        spec = found.spec
        turn = TurnIdentity(
            turn_id="policy-explain",
            session_key=f"{envelope.channel}:{envelope.conversation_id}",
            envelope=envelope,
        )
        call = strip_marker(with_delivery_defaults(spec, arguments, envelope))
        request = approval_request(
            ToolContext(turn=turn), spec, call_id="policy-explain", arguments=call
        )
        policy = ApprovalPolicy(settings)
        answer = await explain(policy, store, request, clock=time.time)
        if answer.verdict == "ask":
            # what the card would show of the change (a file's diff), as the pipeline asks
            asked = await previewed(request, spec, call, ToolContext(turn=turn))
            if isinstance(asked, str):
                said = visible(asked)
                print(f"decision:  refuse\nrule:      before any card, the tool says: {said}")
                return 0
            answer = await explain(policy, store, asked, clock=time.time)
    print(_report(answer, envelope, spec.name, request.requires_approval))
    return 0


def _report(found: Explanation, envelope: IngressEnvelope, tool: str, side_effects: bool) -> str:
    route = envelope.route or "the default"
    lines = [
        f"decision:  {found.verdict}",
        f"rule:      {found.rule}",
        f"tool:      {tool} ({'needs approval' if side_effects else 'read-only'} for this call)",
        f"channel:   {envelope.channel}, conversation {visible(envelope.conversation_id)}"
        f" ({'direct message' if envelope.is_direct else 'group'})",
        f"agent:     {envelope.agent} ({route})",
        f"level:     {found.level}",
    ]
    if found.verdict == "ask":
        reach = [f"{visible(a.approver)}: sees the conversation: {a.sees}" for a in found.approvers]
        reach += [f"{visible(who)}: not counted" for who in found.not_counted]
        if found.approver_roles:
            reach.append(
                f"holders of roles {', '.join(found.approver_roles)} (found at click time)"
            )
        lines.append("approvers: " + ("\n           ".join(reach) if reach else "none"))
        lines.append(f"asked:     {found.asked}")
    lines.append("card:" + (" (cut: approvable only from the full view)" if found.card_cut else ""))
    lines += [f"  {line}" for line in found.card]
    return "\n".join(lines)
