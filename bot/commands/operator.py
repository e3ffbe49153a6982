"""What the ops subcommands share: the operator's identity, the database from the config and
how listings show times.

Ops commands run in their own process next to the daemon; they open the same SQLite file
(WAL allows it) and record the operator as ``operator:$USER``.
"""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Imported when a command runs, not when ``hatchway --help`` builds the command line.
    from bot.config import Settings
    from bot.store import Store


def operator_name() -> str:
    """``operator:NAME`` from ``$USER`` / ``$LOGNAME`` / the login name."""
    name = os.environ.get("USER") or os.environ.get("LOGNAME")
    if not name:
        try:
            name = getpass.getuser()
        except OSError:
            name = "unknown"
    return f"operator:{name}"


def when(ts: float | None) -> str:
    """A stored epoch as the listings show it: ISO UTC to the second, or "never"."""
    return "never" if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def settings_for(args: argparse.Namespace) -> Settings:
    from bot.config import load_settings, resolve_config_path

    return load_settings(resolve_config_path(args.config), require_provider=False)


@asynccontextmanager
async def operator_store(args: argparse.Namespace) -> AsyncIterator[tuple[Settings, Store]]:
    """The settings and the open store named by ``--config`` (or its defaults). Logs go to
    stderr at warning level or above, so the command's output stays machine-readable."""
    from bot.ops.logs import configure_logging
    from bot.store import Store

    settings = settings_for(args)
    level = settings.logging.level if settings.logging.level != "info" else "warning"
    configure_logging(level, settings.logging.format)
    async with await Store.open_configured(settings) as store:
        yield settings, store
