"""``hatchway run`` (the daemon, foreground) and ``hatchway chat`` (the console alone)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Imported when a command runs, not when ``hatchway --help`` builds the command line.
    from bot.config import Settings
    from bot.ops.state import StateLocation


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    run = subparsers.add_parser("run", help="run the daemon in the foreground")
    add_config_argument(run)
    run.add_argument(
        "--drain-timeout",
        type=float,
        default=30.0,
        help="seconds running turns may take to finish on SIGTERM before they are cancelled",
    )
    run.add_argument(
        "--ready-timeout",
        type=float,
        default=30.0,
        help="seconds to wait for every channel to connect before signalling readiness anyway "
        "(with a status naming what is not connected)",
    )
    run.set_defaults(handler=_run)

    chat = subparsers.add_parser(
        "chat",
        help="talk to the agent in this terminal (or answer piped lines, one message each)",
    )
    add_config_argument(chat)
    chat.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="write log lines to stderr instead of hatchway-chat.log in the state directory",
    )
    # everything is closed when _chat returns: the process ends without the interpreter's
    # teardown (bot.cli.main, bot.ops.process_exit)
    chat.set_defaults(handler=_chat, exit_now=True)


def _located(args: argparse.Namespace) -> tuple[Settings, StateLocation]:
    """The settings, with the state folder ``--state-dir`` (or the environment, the file,
    the default) gives: ``chat`` keeps its history and log there, creating it if needed."""
    from bot.config import resolve_config_path
    from bot.ops.state import locate

    return locate(resolve_config_path(args.config), args.state_dir)


async def _run(args: argparse.Namespace) -> int:
    # Start-up only allocates (modules, settings, SDK types) and most of it lives as long as
    # the process: the cyclic collector would walk it ~275 times for nothing, about a fifth
    # of the CPU before READY. The daemon collects once and re-enables it after warm-up.
    gc.disable()
    from bot.config import resolve_config_path
    from bot.ops.daemon import DaemonOptions, run_daemon

    options = DaemonOptions(
        config_path=resolve_config_path(args.config),
        state_dir=args.state_dir,
        drain_timeout_s=args.drain_timeout,
        ready_timeout_s=args.ready_timeout,
    )
    try:
        return await run_daemon(options)
    finally:
        gc.enable()


async def _chat(args: argparse.Namespace) -> int:
    # As in _run: loading the modules and the settings only allocates what lives as long
    # as the process, and the cyclic collector would walk it ~150 times for nothing. It is
    # back on, with what was loaded frozen, before the app starts (_chat_session).
    gc.disable()
    try:
        return await _chat_session(args)
    finally:
        gc.enable()


async def _chat_session(args: argparse.Namespace) -> int:
    from bot.commands.chat import (
        UNANSWERED,
        ChatConsole,
        Conversation,
        banner,
        caught_signals,
        log_file,
    )
    from bot.config import ChannelsConfig
    from bot.ops.logs import configure_logging, open_log_file
    from bot.providers.factory import defer_provider

    settings, location = _located(args)
    # The console alone: other configured channels are not started by ``chat``.
    console_only = settings.model_copy(update={"channels": ChannelsConfig.embedded_console()})
    level, fmt = settings.logging.level, settings.logging.format
    if args.verbose:
        configure_logging(level, fmt)
        where = "stderr (--verbose)"
    else:
        path = log_file(settings)
        try:
            configure_logging(level, fmt, open_log_file(path))
            where = str(path)
        except OSError as exc:
            configure_logging("warning", fmt)
            where = f"stderr, warnings only ({path}: {exc.strerror or exc})"
    import structlog

    structlog.get_logger(__name__).info(
        "state_location", folder=str(location.folder), source=location.origin()
    )
    # A configuration error (unknown provider, missing key) is raised here, before anything
    # starts. The provider's module (a vendor SDK for Anthropic, the model for the embedded
    # provider) is imported on a worker thread and the provider built while the app starts
    # and the first line is read.
    provider = defer_provider(console_only)
    # before the app starts: nothing of the conversation can be on the screen yet. Input
    # from a pipe or a file is a script, whose output is its answers alone: the banner goes
    # to stderr then.
    piped = not sys.stdin.isatty()
    print(banner(settings, log=where), file=sys.stderr if piped else sys.stdout, flush=True)
    from bot.app import App

    # What is loaded so far lives as long as the process: later collections skip it, and
    # the collector is back on from here (the app's start and the conversation make
    # garbage). Not collected first: loading leaves ~500 objects of cyclic garbage (classes
    # that dataclass(slots=True) and the C datetime module replace) among ~80,000, and
    # finding them walks all of them: an eighth of a one-shot's CPU (0.457 -> 0.404 s in
    # bench/oneshot.py) for 0.26 MB of peak RSS (52.2 -> 52.5 MB).
    gc.freeze()
    gc.enable()
    from bot.config import resolve_config_path
    from bot.tools.builtin.sandbox_probe import probe_ahead

    probe_ahead(settings.tools.shell)  # shell's sandbox, ready when the tools are built

    # the config file is hidden from shell's sandbox, --config's included
    unanswered: list[str] = []  # the statuses of turns that did not complete

    def turn_finished(status: str) -> None:
        if status != "completed":
            unanswered.append(status)

    app = App(
        console_only,
        provider=provider,
        config_file=resolve_config_path(args.config),
        turn_finished=turn_finished,
    )
    warming = asyncio.create_task(provider.warm(), name="provider-warm")
    drain_s = 0.0
    started = False
    try:
        try:
            # Ctrl-C is the conversation's from before the start (the console reads as
            # soon as it starts), and the default's again while the app stops: a second
            # Ctrl-C then cuts a drain short
            with caught_signals() as signals:
                await app.start()
                started = True
                console = app.channels.get("console.main")
                if not isinstance(console, ChatConsole):
                    raise RuntimeError("hatchway chat needs the console channel")
                ending = await Conversation(app.gateway, console, signals).run()
            drain_s = ending.drain_s
            if piped and ending.code == 0 and unanswered:
                return UNANSWERED  # a script's caller learns that a line got no answer
            return ending.code
        finally:
            if started:
                await app.stop(drain_timeout_s=drain_s)
    finally:
        warming.cancel()
        await asyncio.gather(warming, return_exceptions=True)
        _drop_typeahead()


def _drop_typeahead() -> None:
    """Discard what was typed at the terminal and not read: keys pressed while the chat was
    ending (a model finishing the prompt it was reading) were meant for the chat, not for
    the shell that takes the terminal back."""
    import termios

    if sys.stdin.isatty():
        with contextlib.suppress(OSError, termios.error):
            termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
