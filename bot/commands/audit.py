"""``hatchway audit list [--since ISO|DURATION] [--format jsonl|csv]``: export the audit trail.

``list`` is the action, as with every other noun (``grants list``, ``schedules list``); bare
``hatchway audit`` is the same command, kept as an alias. The options may stand before or
after ``list``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bot.commands.operator import operator_store


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("audit", help="list and export approval decisions")
    _options(parser)
    add_config_argument(parser)
    parser.set_defaults(handler=_audit)
    sub = parser.add_subparsers(dest="audit_command", metavar="ACTION")
    listing = sub.add_parser("list", help="list approval decisions (the default action)")
    _options(listing)
    add_config_argument(listing)
    for action in listing._actions:
        if action.dest != "help":
            # given after "list" or not at all: what stood before "list" is kept
            action.default = argparse.SUPPRESS


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--since",
        default=None,
        help="an ISO timestamp (UTC if no zone) or a duration back: 90m, 24h, 7d",
    )
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")


async def _audit(args: argparse.Namespace) -> int:
    from bot.approval.audit import parse_since, to_csv, to_jsonl

    since = 0.0
    if args.since:
        try:
            since = parse_since(args.since, time.time())
        except ValueError:
            print(
                f"hatchway: --since {args.since!r} is neither an ISO time nor a duration like 24h",
                file=sys.stderr,
            )
            return 2
    async with operator_store(args) as (_settings, store):
        entries = await store.audit.since(since)
    sys.stdout.write(to_csv(entries) if args.format == "csv" else to_jsonl(entries))
    return 0
