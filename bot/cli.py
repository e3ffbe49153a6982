"""The ``hatchway`` command."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, cast

from bot import __version__
from bot.errors import ConfigError, HatchwayError, SchemaTooNew

# Ops subcommand modules; each exposes ``register(subparsers)``.
COMMAND_MODULES: tuple[str, ...] = (
    "bot.commands.run",
    "bot.commands.doctor",
    "bot.commands.approvals",
    "bot.commands.grants",
    "bot.commands.policy",
    "bot.commands.audit",
    "bot.commands.forget",
    "bot.commands.receipts",
    "bot.commands.pairing",
    "bot.commands.schedules",
    "bot.commands.usage",
    "bot.commands.web",
    "bot.commands.db",
)

#: A command whose module is known before any is imported: ``hatchway chat`` (a one-shot
#: chat starts with it) builds its own module's commands only, not every command's (about 45
#: modules, the doctor's checks among them, that it has no use for).
SOLE_MODULE_OF: dict[str, str] = {"chat": "bot.commands.run"}

Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; for a ``command`` of :data:`SOLE_MODULE_OF`, only the commands
    of its module (its help and errors read the same)."""
    parser = argparse.ArgumentParser(
        prog="hatchway",
        description="A chat-channel bot daemon: Slack, Discord and Telegram in front of one "
        "tool-calling agent, with in-chat approvals.",
    )
    parser.add_argument("--version", action="version", version=f"hatchway {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    sole = SOLE_MODULE_OF.get(command or "")
    for name in COMMAND_MODULES if sole is None else (sole,):
        module = importlib.import_module(name)
        module.register(subparsers)
    return parser


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--config`` and ``--state-dir`` options every subcommand shares (where the
    state is: :mod:`bot.ops.state`)."""
    parser.add_argument(
        "-c",
        "--config",
        default=None,
        help="path to hatchway.toml (default: $HATCHWAY_CONFIG, else ./hatchway.toml if it "
        "exists, else settings from the environment)",
    )
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="the state folder: the database, the workspace (default: $HATCHWAY_STATE_DIR, "
        "else state_dir in the config, else the config file's folder, else the working "
        "directory)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: the process's own command line) and return
    its exit status.

    A command that sets ``exit_now=True`` (``hatchway chat``) has closed everything it owns
    when its handler returns; run as the process's command (``argv`` None: the ``hatchway``
    script, ``python -m bot.cli``), the process then ends at once with that status instead of
    returning, skipping the interpreter's teardown (:mod:`bot.ops.process_exit`)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(words)
    handler = cast(Handler | None, getattr(args, "handler", None))
    if handler is None:
        parser.print_help()
        return 2
    try:
        code = asyncio.run(handler(args))
    except ConfigError as exc:
        print(f"hatchway: configuration error: {exc}", file=sys.stderr)
        return 2
    except SchemaTooNew as exc:  # like a configuration error, nothing a restart changes
        print(f"hatchway: {exc}", file=sys.stderr)
        return 2
    except HatchwayError as exc:
        print(f"hatchway: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if argv is None and getattr(args, "exit_now", False):
        from bot.ops.process_exit import exit_now

        exit_now(code)  # returns only when a thread is left to wait for
    return code


if __name__ == "__main__":
    sys.exit(main())
