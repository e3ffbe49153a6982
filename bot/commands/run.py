"""``hatchway run`` (the daemon, foreground) and ``hatchway chat`` (the console alone)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Imported when a command runs, not when ``hatchway --help`` builds the command line.
    from bot.config import Settings


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

    chat = subparsers.add_parser("chat", help="talk to the agent in this terminal")
    add_config_argument(chat)
    chat.set_defaults(handler=_chat)


def _settings(args: argparse.Namespace) -> Settings:
    from bot.config import load_settings, resolve_config_path

    return load_settings(resolve_config_path(args.config))


async def _run(args: argparse.Namespace) -> int:
    # Start-up only allocates (modules, settings, SDK types) and most of it lives as long as
    # the process: the cyclic collector would walk it ~275 times for nothing, about a fifth
    # of the CPU before READY. The daemon collects once and re-enables it after warm-up.
    gc.disable()
    from bot.config import resolve_config_path
    from bot.ops.daemon import DaemonOptions, run_daemon

    options = DaemonOptions(
        config_path=resolve_config_path(args.config),
        drain_timeout_s=args.drain_timeout,
        ready_timeout_s=args.ready_timeout,
    )
    try:
        return await run_daemon(options)
    finally:
        gc.enable()


async def _chat(args: argparse.Namespace) -> int:
    from bot.config import ChannelsConfig
    from bot.ops.logs import configure_logging

    settings = _settings(args)
    # The console alone: other configured channels are not started by ``chat``.
    console_only = settings.model_copy(update={"channels": ChannelsConfig.embedded_console()})
    configure_logging("warning", settings.logging.format)
    from bot.app import App

    app = App(console_only)
    await app.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM,):
        loop.add_signal_handler(sig, stop.set)
    print(
        "hatchway chat: type a message and press Enter. /new starts over, /stop cancels, "
        "Ctrl-D quits.",
        flush=True,
    )
    done = asyncio.ensure_future(app.wait_channel_done("console.main"))
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({done, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        done.cancel()
        stopped.cancel()
        await app.stop(drain_timeout_s=300.0)
    return 0
