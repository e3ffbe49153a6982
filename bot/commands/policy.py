"""``hatchway policy explain``: would this call run, be asked about, or be refused, and why.

The call is built as the pipeline builds it (:mod:`bot.tools.authorization`: the tool's own
per-call check, the delivery defaults, the ``approved`` marker stripped) from the daemon's
tool catalog, and judged by the approval policy itself over the service's database (its
grants): :mod:`bot.approval.explain`. MCP tools are known only to a running daemon (their
servers say what they are), so they are unknown here.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.operator import located, open_existing, quiet_logging

if TYPE_CHECKING:
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
    ask.add_argument(
        "--background",
        action="store_true",
        help="a turn no person started (a scheduled job's): it never asks",
    )
    ask.add_argument("tool", help="the tool's name")
    ask.add_argument("arguments", nargs="?", default="{}", help="the arguments, a JSON object")
    add_config_argument(ask)
    ask.set_defaults(handler=_explain)


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
    from bot.tools.policy_question import Unanswerable, ask, imagined_envelope, report

    settings, location = located(args)
    quiet_logging(settings)
    envelope = imagined_envelope(
        settings,
        channel=str(args.channel),
        conversation=args.conversation,
        user=args.user,
        roles=tuple(args.role),
        thread=args.thread,
        dm=args.dm,
        agent=args.agent,
        background=args.background,
    )
    if isinstance(envelope, Unanswerable):
        print(f"hatchway: {envelope.message}")
        return BAD_QUESTION
    async with await open_existing(settings, location) as store:
        registry = _registry(settings, store, location.config_file)
        answer = await ask(
            envelope,
            args.tool,
            args.arguments,
            settings=settings,
            store=store,
            specs=registry.specs,
            clock=time.time,
        )
    if isinstance(answer, Unanswerable):
        print(f"hatchway: {answer.message}")
        return BAD_QUESTION
    print(report(answer))
    return 0
