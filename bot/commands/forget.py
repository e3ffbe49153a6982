"""``hatchway forget --user ID | --conversation ID [--channel KIND.ALIAS]``: delete what one
person, or one conversation, left in the database and the workspace, and print what went.

A person is forgotten on every channel unless ``--channel`` names one; a conversation id
needs its channel, named with ``--channel`` unless the configuration and the database know
only one. What is deleted and what stays with a tombstone is
:mod:`bot.store.forget`'s (docs/operations.md, "Retention and deletion"); the workspace
folders of the person's direct conversations, or of the conversation, are removed when
``tools.workspace.scope`` gives each conversation its own. It runs next to a running daemon
(the database takes one writer at a time).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.operator import operator_store

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.store import ForgetReport, Store


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser(
        "forget", help="delete what one person or one conversation left (audit rows stay)"
    )
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", metavar="ID", help="a platform user id, as /id shows it")
    who.add_argument("--conversation", metavar="ID", help="a chat id, as /id shows it")
    parser.add_argument(
        "--channel",
        metavar="KIND.ALIAS",
        default=None,
        help="only on this channel (telegram.main); a person: every channel by default",
    )
    add_config_argument(parser)
    parser.set_defaults(handler=_forget)


async def _forget(args: argparse.Namespace) -> int:
    from bot.tools.builtin.scope_removal import remove_conversation_folders

    async with operator_store(args) as (settings, store):
        if args.user is not None:
            report = await store.forget.user(args.user, channel=args.channel)
            folders = report.direct_conversations
            what = f"user {args.user} on {args.channel or 'every channel'}"
        else:
            channel = args.channel or await _only_channel(settings, store, args.conversation)
            if channel is None:
                return 2
            report = await store.forget.conversation(channel, args.conversation)
            folders = [(channel, args.conversation)]
            what = f"conversation {args.conversation} on {channel}"
        root = Path(settings.state_dir) / settings.tools.workspace.path
        files = await remove_conversation_folders(root, settings.tools.workspace.scope, folders)
    sys.stdout.write(_printed(what, report, files))
    return 0


async def _only_channel(settings: Settings, store: Store, conversation: str) -> str | None:
    """The one channel a bare conversation id can be on; None (and why, on stderr) when the
    configuration and the database know several, or none."""
    known = {f"{kind}.{alias}" for kind, alias, _cfg in settings.channels.all()}
    known |= await store.forget.channels()
    if len(known) == 1:
        return known.pop()
    names = ", ".join(sorted(known)) or "none"
    print(
        f"hatchway: name the channel of conversation {conversation} with --channel "
        f"(channels known: {names})",
        file=sys.stderr,
    )
    return None


def _printed(what: str, report: ForgetReport, workspace_files: int) -> str:
    lines = [f"forgot {what} (tombstone {report.tombstone})", "removed:"]
    removed = {**report.removed, "workspace files": workspace_files}
    lines += [f"  {table:<20} {count}" for table, count in removed.items()]
    if any(report.tombstoned.values()):
        lines.append("kept, the id replaced by the tombstone:")
        lines += [f"  {table:<20} {count}" for table, count in report.tombstoned.items()]
    if report.in_flight:
        lines.append(f"left: {report.in_flight} messages still waiting for or in their turn")
    return "\n".join(lines) + "\n"
