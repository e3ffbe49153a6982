"""``hatchway forget --user ID | --conversation ID [--channel KIND.ALIAS] [--dry-run | --yes]``:
delete what one person, or one conversation, left in the database and the workspace, and print
what went.

Nothing is deleted unasked: the command first shows what it would delete (a dry run) and asks
at the terminal; ``--yes`` deletes without asking, ``--dry-run`` only shows. With no terminal
to ask at and no ``--yes`` it prints the dry run and exits 1. The report has one shape
whatever was found (:func:`report_text`): a heading, every table with its count, in name
order, zeros included.

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
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--dry-run", action="store_true", help="show what would be deleted; delete nothing"
    )
    how.add_argument("-y", "--yes", action="store_true", help="delete without asking")
    add_config_argument(parser)
    parser.set_defaults(handler=_forget)


#: Exit status when nothing was deleted for want of a yes (no terminal, or the answer no).
NOT_CONFIRMED = 1


async def _forget(args: argparse.Namespace) -> int:
    async with operator_store(args) as (settings, store):
        channel = args.channel
        if args.conversation is not None and channel is None:
            channel = await _only_channel(settings, store, args.conversation)
            if channel is None:
                return 2
        if not args.yes:
            sys.stdout.write(await _run(args, settings, store, channel, dry_run=True))
            if args.dry_run:
                return 0
            if not _confirmed():
                return NOT_CONFIRMED
        sys.stdout.write(await _run(args, settings, store, channel, dry_run=False))
    return 0


def _confirmed() -> bool:
    """Ask at the terminal whether to delete; False (and why, on stderr) without one."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "hatchway: nothing deleted: no terminal to ask at; run again with --yes to delete",
            file=sys.stderr,
        )
        return False
    try:
        answer = input("Delete all this? Audit rows stay, with the id replaced. [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing deleted", file=sys.stderr)
    return False


async def _run(
    args: argparse.Namespace,
    settings: Settings,
    store: Store,
    channel: str | None,
    *,
    dry_run: bool,
) -> str:
    from bot.tools.builtin.scope_removal import remove_conversation_folders

    if args.user is not None:
        report = await store.forget.user(args.user, channel=channel, dry_run=dry_run)
        folders = report.direct_conversations
        what = f"user {args.user} on {channel or 'every channel'}"
    else:
        assert channel is not None
        report = await store.forget.conversation(channel, args.conversation, dry_run=dry_run)
        folders = [(channel, args.conversation)]
        what = f"conversation {args.conversation} on {channel}"
    root = Path(settings.state_dir) / settings.tools.workspace.path
    files = await remove_conversation_folders(
        root, settings.tools.workspace.scope, folders, dry_run=dry_run
    )
    return report_text(what, report, files)


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


def report_text(what: str, report: ForgetReport, workspace_files: int) -> str:
    """The report, in one shape whatever was found::

    would forget user 1001 on every channel        (a dry run; "forgot …" after one)
    tombstone: forgotten:3f…                       ("none yet" in a dry run)
    removed:                                       ("would remove:" in a dry run)
      approvals            0
      …                                            (every table, by name, zeros too)
    kept, the id replaced by the tombstone:
      audit                1
    left: 0 messages still waiting for or in their turn
    """
    from bot.store.forget import REMOVED_TABLES, TOMBSTONED_TABLES

    dry = report.dry_run
    lines = [
        f"{'would forget' if dry else 'forgot'} {what}",
        f"tombstone: {'none yet (dry run)' if dry else report.tombstone}",
        "would remove:" if dry else "removed:",
    ]
    removed = {
        **dict.fromkeys(REMOVED_TABLES, 0),
        **report.removed,
        "workspace files": workspace_files,
    }
    lines += [f"  {table:<20} {removed[table]}" for table in sorted(removed)]
    lines.append("kept, the id replaced by the tombstone:")
    kept = {**dict.fromkeys(TOMBSTONED_TABLES, 0), **report.tombstoned}
    lines += [f"  {table:<20} {kept[table]}" for table in sorted(kept)]
    lines.append(f"left: {report.in_flight} messages still waiting for or in their turn")
    return "\n".join(lines) + "\n"
