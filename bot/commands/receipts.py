"""``hatchway receipts verify CALL_ID | --turn TURN_ID``: check stored receipts.

Each matching ``tool_calls`` row's receipt is recomputed from the row as it is stored now,
with the key ``agent.receipt_key_env`` names, and reported per call: ``OK``, the fields that
changed since it was signed, an invalid receipt, a legacy receipt, or no receipt.

Exit codes: 0 when every receipt found verified; 1 when any did not (changed, invalid or
legacy), no matching row has a receipt, or there is no database where the command looks
(:mod:`bot.commands.operator`); 2 for an unknown id, a usage error or a missing key.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.commands.operator import operator_store, when


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("receipts", help="verify tool-call receipts")
    sub = parser.add_subparsers(dest="receipts_command", metavar="ACTION", required=True)
    verify = sub.add_parser(
        "verify",
        help="check the receipts of one call or of a turn's calls against their stored rows",
    )
    target = verify.add_mutually_exclusive_group(required=True)
    target.add_argument("call_id", metavar="CALL_ID", nargs="?", help="a tool call's id")
    target.add_argument("--turn", metavar="TURN_ID", help="every call of this turn")
    add_config_argument(verify)
    verify.set_defaults(handler=_verify)


async def _verify(args: argparse.Namespace) -> int:
    from bot.tools.receipt import ReceiptCheck, ReceiptSigner, ReceiptVerdict

    async with operator_store(args) as (settings, store):
        if args.turn is not None:
            records = await store.tool_calls.for_turn(args.turn)
            asked = f"turn {args.turn}"
        else:
            records = await store.tool_calls.for_call(args.call_id)
            asked = f"call {args.call_id}"
    if not records:
        print(f"hatchway: no tool call recorded for {asked}", file=sys.stderr)
        return 2
    signed = sum(r.receipt is not None for r in records)
    # the key is needed (and must be set) only when there is a receipt to check
    signer = ReceiptSigner.for_verifying(settings.agent) if signed else None
    verified = 0
    for record in records:
        check = (
            signer.check(record)
            if signer is not None
            else ReceiptCheck(verdict=ReceiptVerdict.UNSIGNED)
        )
        verified += check.verified
        print(
            f"{record.call_id}  {record.tool}  turn {record.turn_id}  "
            f"recorded {when(record.created_at)}  {check.describe()}"
        )
    if not signed:
        print(f"nothing to verify: no call of {asked} has a receipt")
        return 1
    return 0 if verified == signed else 1
