"""``hatchway schedules list|remove ID``: the scheduled jobs in the database."""

from __future__ import annotations

import argparse
from typing import Any

from bot.commands.operator import (
    located,
    open_existing,
    operator_name,
    operator_store,
    quiet_logging,
)


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("schedules", help="list and remove scheduled jobs")
    sub = parser.add_subparsers(dest="schedules_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="show scheduled jobs")
    listing.add_argument("--all", action="store_true", help="include finished one-shot jobs")
    add_config_argument(listing)
    listing.set_defaults(handler=_list)
    remove = sub.add_parser("remove", help="remove a scheduled job")
    remove.add_argument("job_id", metavar="ID")
    add_config_argument(remove)
    remove.set_defaults(handler=_remove)


async def _list(args: argparse.Namespace) -> int:
    from bot.schedules.book import ScheduleBook
    from bot.schedules.recurrence import describe

    settings, location = located(args)
    quiet_logging(settings)
    async with await open_existing(settings, location) as store:
        jobs = await ScheduleBook(store.schedules).jobs()
    shown = [j for j in jobs if j.enabled or j.paused or args.all]
    if not shown:
        print(f"no scheduled jobs in {location.database(settings)}")
        return 0
    for job in shown:
        spec = job.spec
        state = "active" if job.enabled else ("paused" if job.paused else "finished")
        target = (
            "none"
            if spec.delivery.value == "none"
            else (f"{spec.target.channel}:{spec.target.conversation_id}")
        )
        label = f' "{spec.name}"' if spec.name else ""
        print(
            f"{job.id}{label}  {state}  {spec.when()}  next {describe(job.next_run_at, 'UTC')}"
            f"  last {describe(job.last_run_at, 'UTC')}  from {spec.origin.channel}:"
            f"{spec.origin.conversation_id} by {spec.creator_id}  delivery {target}"
        )
    return 0


async def _remove(args: argparse.Namespace) -> int:
    from bot.schedules.book import ScheduleBook

    async with operator_store(args) as (_settings, store):
        removed = await ScheduleBook(store.schedules).remove(args.job_id)
    if removed:
        print(f"removed job {args.job_id} ({operator_name()})")
        return 0
    print(f"job {args.job_id}: no such job")
    return 1
