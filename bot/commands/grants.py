"""``hatchway grants list|revoke ID``: the standing "always" decisions."""

from __future__ import annotations

import argparse
import time
from typing import Any

from bot.commands.operator import located, open_existing, operator_store, quiet_logging, when


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("grants", help='list and revoke "always" grants')
    sub = parser.add_subparsers(dest="grants_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="show active grants")
    listing.add_argument("--all", action="store_true", help="include revoked and expired")
    add_config_argument(listing)
    listing.set_defaults(handler=_list)
    revoke = sub.add_parser("revoke", help="revoke a grant")
    revoke.add_argument("grant_id", metavar="ID", type=int)
    add_config_argument(revoke)
    revoke.set_defaults(handler=_revoke)


async def _list(args: argparse.Namespace) -> int:
    # with the handler, not the parser: it brings the store and the config models
    from bot.approval.grants import size_of

    now = time.time()
    settings, location = located(args)
    quiet_logging(settings)
    async with await open_existing(settings, location) as store:
        grants = await store.grants.list(now=now, include_inactive=args.all)
    if not grants:
        print(f"no grants in {location.database(settings)}")
        return 0
    for g in grants:
        state = "active" if g.active(now) else ("revoked" if g.revoked_at else "expired")
        where = g.scope_key or "everywhere"
        print(
            f"{g.id}  {state:<7}  {g.tool}  {g.scope}:{where}  by {g.granted_by}  "
            f"size {size_of(g)}  created {when(g.created_at)}  expires {when(g.expires_at)}"
        )
    return 0


async def _revoke(args: argparse.Namespace) -> int:
    async with operator_store(args) as (_settings, store):
        revoked = await store.grants.revoke(args.grant_id, time.time())
    if revoked:
        print(f"revoked grant {args.grant_id}")
        return 0
    print(f"grant {args.grant_id}: no active grant with that id")
    return 1
