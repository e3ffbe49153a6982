"""``hatchway approvals list|approve ID|deny ID``: decide pending approvals as the operator.

A waiting turn in the running daemon notices the decision within about a second and edits
the card itself.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bot.commands.operator import located, open_existing, operator_name, quiet_logging, when
from bot.visible_text import visible


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("approvals", help="list and decide approval requests")
    sub = parser.add_subparsers(dest="approvals_command", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="show approval requests (pending by default)")
    listing.add_argument("--all", action="store_true", help="include decided requests")
    add_config_argument(listing)
    listing.set_defaults(handler=_list)
    for action, help_text in (
        ("approve", "approve a pending request"),
        ("deny", "deny a pending request"),
    ):
        cmd = sub.add_parser(action, help=help_text)
        cmd.add_argument("approval_id", metavar="ID")
        cmd.add_argument(
            "--as",
            dest="as_name",
            metavar="NAME",
            default=None,
            help="the name recorded as the decider (default: $SUDO_USER, else $USER); "
            "marked unverified unless it is the account running the command",
        )
        add_config_argument(cmd)
        cmd.set_defaults(handler=_decide, approve=action == "approve")


async def _list(args: argparse.Namespace) -> int:
    from bot.approval.card import escalated_names
    from bot.store.approvals import ApprovalStatus

    settings, location = located(args)
    quiet_logging(settings)
    async with await open_existing(settings, location) as store:
        status = None if args.all else ApprovalStatus.PENDING
        records = await store.approvals.list(status=status)
    if not records:
        nothing = "no approval requests" if args.all else "no pending approval requests"
        print(f"{nothing} in {location.database(settings)}")
        return 0
    for r in records:
        print(
            visible(
                f"{r.id}  {r.status:<8}  {r.tool}  {r.channel} {r.conversation_id}  "
                f"by {r.requester}  created {when(r.created_at)}  expires {when(r.expires_at)}"
                + (f"  decided by {r.decided_by}" if r.decided_by else "")
            )
        )
        if r.status is ApprovalStatus.PENDING:
            escalated = escalated_names(r.escalated_to, r.escalated_roles) or "nobody"
            print(
                visible(
                    f"    waiting {_waited(time.time() - r.created_at)}  reminders sent "
                    f"{r.reminders_sent}  escalated to {escalated}"
                )
            )
        if r.quorum > 1:
            given = ", ".join(v.voter_name or v.voter for v in r.votes) or "none yet"
            print(visible(f"    needs {r.quorum} approvers: {len(r.votes)} approved ({given})"))
        # The operator approves from here: every argument in full, never the cut summary.
        for line in (r.full_text or "\n".join(r.summary)).split("\n"):
            print(f"    {line}")
    return 0


def _waited(seconds: float) -> str:
    """``2h 05m``, ``12m 30s``, ``40s``."""
    whole = max(0, int(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


async def _decide(args: argparse.Namespace) -> int:
    from bot.approval.card_flow import counted_words, operator_key
    from bot.approval.service import ApprovalService
    from bot.channel import ClickVerdict
    from bot.store.approvals import ApprovalStatus

    settings, location = located(args)
    quiet_logging(settings)
    operator = operator_name(args.as_name)
    async with await open_existing(settings, location) as store:
        service = ApprovalService(settings, store, lambda _ref: None)
        verdict = await service.decide_from_cli(args.approval_id, args.approve, operator)
        counted = await store.approvals.get(args.approval_id)
    if verdict in (ClickVerdict.COUNTED, ClickVerdict.ALREADY_COUNTED) and counted:
        # one approval of several: which one, and how many more the request waits for
        words = counted_words(counted, operator_key(operator))
        again = (
            " (already counted: it counts once)" if verdict is ClickVerdict.ALREADY_COUNTED else ""
        )
        print(f"{args.approval_id}: {words}{again}")
        return 0
    if verdict is ClickVerdict.ACCEPTED:
        decided = ApprovalStatus.APPROVED if args.approve else ApprovalStatus.DENIED
        print(f"{decided} {args.approval_id}")
        return 0
    if verdict is ClickVerdict.ALREADY_DECIDED:
        print(f"{args.approval_id} was already decided")
    else:
        print(
            f"{args.approval_id}: no pending request with that id (expired or unknown) in "
            f"{location.database(settings)}"
        )
    return 1
