"""``hatchway db migrate-to URL``: move the configured SQLite database into PostgreSQL.

The source is the SQLite file ``[storage] path`` names (under ``state_dir`` when relative),
even when ``[storage] url`` already names the target. The target is a PostgreSQL database
that exists and holds no rows (``createdb`` made it): the command migrates it, copies every
table in one transaction, sets each id sequence past the highest id copied and prints the
rows per table. A target with rows is refused, and any failure leaves it empty. The file is
not changed (it is migrated first if it was behind, as the daemon would at its next start),
so it stays a backup. Stop the daemon first: the copy holds the file's write lock, and
rows written after it would not be moved. The password comes from the environment variable
``--password-env`` names (default: ``[storage] password_env``); a URL holding one is refused,
as is one ``[storage] url`` would not take, so the URL printed at the end (as given, its
options such as a unix socket's ``host=`` kept) is the one to configure.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bot.commands.operator import located, missing_file


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    db = subparsers.add_parser("db", help="move the database to PostgreSQL")
    actions = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    move = actions.add_parser(
        "migrate-to",
        help="copy the SQLite database into an empty PostgreSQL database",
        description="Copy every table of the configured SQLite database into an empty, "
        "freshly created PostgreSQL database, in one transaction. Stop the daemon first.",
    )
    move.add_argument("url", help="postgresql://user@host:port/database (no password in it)")
    move.add_argument(
        "--password-env",
        default=None,
        help="the environment variable holding the password (default: storage.password_env)",
    )
    add_config_argument(move)
    move.set_defaults(handler=_migrate_to)


async def _migrate_to(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from bot.config.settings import StorageConfig
    from bot.ops.logs import configure_logging
    from bot.store.postgres import Database as PostgresDatabase
    from bot.store.postgres import describe, is_postgres_url, url_password
    from bot.store.sqlite import Database as SqliteDatabase
    from bot.store.transfer import copy_sqlite_to_postgres

    settings, location = located(args)
    configure_logging("warning", settings.logging.format)
    url: str = args.url
    if not is_postgres_url(url):
        print("hatchway: the target must be a postgresql:// URL", file=sys.stderr)
        return 2
    env = args.password_env or settings.storage.password_env
    if url_password(url):
        print(
            f"hatchway: the URL must not hold the password: put it in the environment "
            f"variable {env} (or name another with --password-env)",
            file=sys.stderr,
        )
        return 2
    try:  # the rules [storage] url is held to: the URL printed at the end is one to set there
        StorageConfig(url=url, password_env=env)
    except ValidationError as exc:
        why = exc.errors()[0]["msg"].removeprefix("Value error, ")
        print(f"hatchway: {why.replace('storage.url', 'the URL')}", file=sys.stderr)
        return 2
    path = settings.database_path()
    missing = missing_file(settings, location)  # the source, even when storage.url is set
    if missing is not None:
        print(f"hatchway: {missing}", file=sys.stderr)
        return 1
    password = settings.secret(args.password_env or settings.storage.password_env)
    async with (
        await SqliteDatabase.open(path, create=False) as source,
        await PostgresDatabase.open(url, password=password, pool_size=1) as target,
    ):
        print(f"copying {path} into {describe(url)}", flush=True)
        moved = await copy_sqlite_to_postgres(source, target)
    width = max((len(name) for name in moved.rows), default=0)
    for name, count in sorted(moved.rows.items()):
        print(f"  {name:<{width}}  {count:>9}")
    print(
        f"copied {moved.total} rows of {len(moved.rows)} tables (schema {moved.schema}) in one "
        "transaction; id sequences set past the highest id copied"
    )
    # the URL as given (it holds no password): its options, a unix socket's host= among
    # them, are part of what reaches the database
    print(
        f'next: set [storage] url = "{url}" (the password in the variable '
        "storage.password_env names) and start the daemon; keep the file as a backup"
    )
    return 0
