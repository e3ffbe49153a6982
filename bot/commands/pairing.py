"""``hatchway pairing list|approve CODE``: let a stranger who DMed the bot in."""

from __future__ import annotations

import argparse
import time
from typing import Any

from bot.commands.operator import (
    located,
    open_existing,
    operator_name,
    operator_store,
    quiet_logging,
    when,
)


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("pairing", help="list and approve pairing codes")
    sub = parser.add_subparsers(dest="pairing_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="show pending and approved pairings")
    listing.add_argument("--all", action="store_true", help="include expired codes")
    add_config_argument(listing)
    listing.set_defaults(handler=_list)
    approve = sub.add_parser("approve", help="approve a pairing code")
    approve.add_argument("code", metavar="CODE")
    add_config_argument(approve)
    approve.set_defaults(handler=_approve)


async def _list(args: argparse.Namespace) -> int:
    now = time.time()
    settings, location = located(args)
    quiet_logging(settings)
    async with await open_existing(settings, location) as store:
        records = await store.pairings.list(now=now, include_inactive=args.all)
    if not records:
        print(f"no pairings in {location.database(settings)}")
        return 0
    for p in records:
        state = "expired" if p.status == "pending" and not p.pending_at(now) else p.status
        who = f"{p.display_name} ({p.user_id})" if p.display_name else p.user_id
        tail = f"approved by {p.approved_by}" if p.approved_by else f"expires {when(p.expires_at)}"
        print(f"{p.code}  {state:<8}  {p.channel}  {who}  {tail}")
    return 0


async def _approve(args: argparse.Namespace) -> int:
    from bot.gateway.access import AccessPolicy

    async with operator_store(args) as (settings, store):
        access = AccessPolicy(settings.channels, store)
        outcome = await access.approve_pairing(args.code, operator_name())
    print(outcome.message)
    return 0 if outcome.approved else 1
