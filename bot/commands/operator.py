"""What the ops subcommands share: the operator's identity, the service's database and how
listings show times.

Ops commands run in their own process next to the daemon; they open the same SQLite file (WAL
allows it), or the same PostgreSQL database from any host with the URL, and record the operator
as ``operator:NAME`` (:func:`operator_name`: ``--as``, ``$SUDO_USER``, ``$USER``). They find it
where the daemon does (:mod:`bot.ops.state`: ``--state-dir``, ``HATCHWAY_STATE_DIR``,
``state_dir``, the config's folder) and never make one: only ``hatchway run``, ``hatchway
chat`` and the target of ``hatchway db migrate-to`` create state. A database that is not there,
or holds no hatchway schema, is a :class:`~bot.errors.StorageError` (exit status 1) naming the
place looked at and the rule that chose it, with nothing created. They never migrate either: a
database behind this version's schema waits for the daemon, which applies the migrations at its
next start.
"""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import StorageError

if TYPE_CHECKING:
    # Imported when a command runs, not when ``hatchway --help`` builds the command line.
    from bot.config import Settings
    from bot.ops.state import StateLocation
    from bot.store import Store

WHERE_TO_LOOK = (
    "point the command at the service's state with --state-dir DIR, HATCHWAY_STATE_DIR=DIR "
    "or state_dir in the config (the systemd unit's is /var/lib/hatchway); nothing was created"
)


#: The account the systemd unit runs the daemon as (systemd/hatchway.service).
SERVICE_USER = "hatchway"
#: Accounts a person shares, or works through: a name recorded from them is a claim.
SHARED_ACCOUNTS = frozenset({"root", SERVICE_USER})
UNVERIFIED = " (unverified)"
NAME_CHARS = 64


def operator_name(claimed: str | None = None) -> str:
    """``operator:NAME``: ``claimed`` (``--as NAME``), else ``$SUDO_USER``, else ``$USER`` /
    ``$LOGNAME``, else the account's name, each cleaned of format and control characters as
    the cards clean names. When the command runs as root or as the service's account, or
    ``--as`` names someone other than the account, the name is only what was said:
    `` (unverified)`` is added. A name is never required: ``operator:unknown`` at worst."""
    from bot.visible_text import visible

    account = _account()
    candidates = (
        claimed,
        os.environ.get("SUDO_USER"),
        os.environ.get("USER"),
        os.environ.get("LOGNAME"),
        account,
    )
    name = next(
        (clean for raw in candidates if raw and (clean := _cleaned(visible(raw)))), "unknown"
    )
    vouched = account is not None and account not in SHARED_ACCOUNTS and name == account
    return f"operator:{name}" + ("" if vouched else UNVERIFIED)


def _cleaned(name: str) -> str:
    return " ".join(name.split())[:NAME_CHARS]


def _account() -> str | None:
    """The name of the account this process runs as (its effective user id)."""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (KeyError, ImportError):
        try:
            return getpass.getuser()
        except OSError:
            return None


def when(ts: float | None) -> str:
    """A stored epoch as the listings show it: ISO UTC to the second, or "never"."""
    return "never" if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def located(args: argparse.Namespace) -> tuple[Settings, StateLocation]:
    """The settings ``--config`` names, with the state folder ``--state-dir`` (or the
    environment, the file, the default) gives, and where that folder came from."""
    from bot.config import resolve_config_path
    from bot.ops.state import locate

    path = resolve_config_path(args.config)
    return locate(path, args.state_dir, require_provider=False)


def quiet_logging(settings: Settings) -> None:
    """Logs to stderr at warning level or above, so the command's output stays
    machine-readable."""
    from bot.ops.logs import configure_logging

    level = settings.logging.level if settings.logging.level != "info" else "warning"
    configure_logging(level, settings.logging.format)


def missing_file(settings: Settings, location: StateLocation) -> StorageError | None:
    """The error to stop with when the SQLite file ``storage.path`` names is not there
    (None when it is)."""
    if Path(settings.database_path()).is_file():
        return None
    return StorageError(f"no database at {location.file(settings)}: {WHERE_TO_LOOK}")


async def open_existing(
    settings: Settings, location: StateLocation, *, behind_ok: bool = False
) -> Store:
    """The database the settings name, opened only if it is there and holds a hatchway
    schema this version can use: the latest, or (``behind_ok``: a reader that copes) an
    older one. Never creates a file or a schema, never migrates; StorageError otherwise."""
    from bot.wiring.storage import open_store

    missing = None if settings.storage.url else missing_file(settings, location)
    if missing is not None:
        raise missing
    store = await open_store(settings, migrate=False, create=False)
    try:
        version = await store.schema_version()
        latest = _latest_schema(settings)
        where = location.database(settings)
        if version == 0:
            raise StorageError(
                f"{where} holds no hatchway schema (the daemon creates it at its first "
                f"start): {WHERE_TO_LOOK}"
            )
        if version > latest:
            raise StorageError(
                f"{where} has schema {version}, newer than this version knows ({latest}): "
                "run the hatchway the service runs"
            )
        if version < latest and not behind_ok:
            raise StorageError(
                f"{where} has schema {version}, behind this version's {latest}: the daemon "
                "applies the migrations at its next start (until then, run the hatchway the "
                "service runs)"
            )
    except BaseException:
        await store.aclose()
        raise
    return store


def _latest_schema(settings: Settings) -> int:
    if settings.storage.url:
        from bot.store.postgres import migrations as postgres_migrations

        known = postgres_migrations()
    else:
        from bot.store.sqlite.schema import migrations as sqlite_migrations

        known = sqlite_migrations()
    return max((number for number, _, _ in known), default=0)


@asynccontextmanager
async def operator_store(args: argparse.Namespace) -> AsyncIterator[tuple[Settings, Store]]:
    """The settings and the service's open store (:func:`open_existing`)."""
    settings, location = located(args)
    quiet_logging(settings)
    async with await open_existing(settings, location) as store:
        yield settings, store
