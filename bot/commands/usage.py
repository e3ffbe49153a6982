"""``hatchway usage [--by user|channel|agent|model] [--since 7d]``: what model calls used.

Reads the ``usage`` table of the service's database (found as every ops command finds it,
:mod:`bot.commands.operator`), read only: it works next to a running daemon (WAL) and on a
stopped one's file, and never migrates it (a database the daemon has not upgraded yet has no
usage to show). No database there: nothing is created, and the command says where it
looked and exits 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bot.commands.operator import located, open_existing, quiet_logging, when

#: The first migration with the ``usage`` table.
USAGE_SCHEMA = 10


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser(
        "usage", help="model tokens and cost by user, channel, agent or model"
    )
    parser.add_argument(
        "--by", choices=("user", "channel", "agent", "model"), default="model", help="group by"
    )
    parser.add_argument(
        "--since",
        default="30d",
        help="a duration back (90m, 24h, 7d; default 30d) or an ISO time (UTC if no zone)",
    )
    add_config_argument(parser)
    parser.set_defaults(handler=_usage)


async def _usage(args: argparse.Namespace) -> int:
    from bot.approval.audit import parse_since
    from bot.store.usage import UsageGrouping
    from bot.usage.report import render

    try:
        since = parse_since(args.since, time.time())
    except ValueError:
        print(
            f"hatchway: --since {args.since!r} is neither an ISO time nor a duration like 7d",
            file=sys.stderr,
        )
        return 2
    settings, location = located(args)
    quiet_logging(settings)
    by = UsageGrouping(args.by)
    async with await open_existing(settings, location, behind_ok=True) as store:
        if await store.schema_version() < USAGE_SCHEMA:
            print("no model calls recorded yet (the daemon records them once it has started)")
            return 0
        rows = await store.usage.summary(by, since=since)
    print(f"model usage since {when(since)}, by {by.value}")
    sys.stdout.write(render(rows, by))
    return 0
