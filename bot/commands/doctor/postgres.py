"""The database check for PostgreSQL (``[storage] url``): the server can be reached with the
configured credentials, runs version 13 or newer, accepts writes, and has a schema this
version knows.

As for a SQLite file (:mod:`.database`), the check never changes the schema: pending
migrations are a ``⚠`` line (take a ``pg_dump`` first; the daemon applies them at its next
start, one replica at a time under an advisory lock), and a schema newer than this version's
last migration fails. The URL is shown without credentials, and the password never appears:
a failed sign-in names ``storage.password_env`` and the variable it names.

:func:`replicas_check` lists the live replicas and says whether parking is on: it is off
while one of them runs a release that does not advertise it (a rolling upgrade,
docs/operations.md "Several replicas").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult
from bot.errors import StorageError, StorageUnavailable

if TYPE_CHECKING:
    from bot.config import Settings

NAME = "database"
BACKUP = "back it up first with pg_dump (docs/operations.md, PostgreSQL)"


async def postgres_check(settings: Settings) -> CheckResult:
    """Whether the PostgreSQL database ``[storage] url`` names is reachable, recent enough,
    writable and migrated."""
    from bot.store.postgres import MIN_SERVER_VERSION, Database, describe, migrations

    storage = settings.storage
    url = storage.url or ""
    where = describe(url)
    env = storage.password_env
    password = settings.secret(env)
    latest = max((number for number, _, _ in migrations()), default=0)
    try:
        db = await Database.open(url, password=password, migrate=False, pool_size=1)
    except StorageUnavailable as exc:
        return _failed(
            str(exc),
            f"check storage.url ({where}): the host and port, that the server runs and "
            "accepts connections from this host (listen_addresses, the firewall)",
        )
    except StorageError as exc:
        text = str(exc)
        if "needs" in text and str(MIN_SERVER_VERSION) in text:
            return _failed(text, f"upgrade the server to PostgreSQL {MIN_SERVER_VERSION} or newer")
        if "password" in text or "authentication" in text or "pg_hba" in text:
            hint = "" if password else f" (the environment variable {env} is not set)"
            return _failed(
                text,
                f"check the user in storage.url and the password in the environment variable "
                f"storage.password_env names{hint}, and the server's pg_hba.conf",
            )
        return _failed(text, f"check storage.url ({where}): the database and its owner")
    async with db:
        version = await db.schema_version()
        if version > latest:
            return _failed(
                f"{where} has schema {version}, newer than this version knows ({latest}): a "
                "newer hatchway has migrated it",
                "install that newer version again, or restore the pg_dump taken before it "
                "(docs/operations.md, Roll back)",
            )
        await db.check_writable()
        server = f"PostgreSQL {db.server_version}"
    if version < latest:
        pending = latest - version
        return CheckResult(
            name=NAME,
            ok=True,
            warning=True,
            detail=f"{where} ok ({server}, schema {version}, writable); {pending} "
            f"migration{'s' if pending != 1 else ''} pending, applied at the next start",
            fix=f"{BACKUP}: the database storage.url names",
        )
    detail = f"{where} ok ({server}, schema {version}, writable)"
    return CheckResult(name=NAME, ok=True, detail=detail)


def _failed(detail: str, fix: str) -> CheckResult:
    return CheckResult(name=NAME, ok=False, detail=detail, fix=fix)


async def replicas_check(settings: Settings) -> CheckResult | None:
    """The live replicas of the database and whether they all park (None: the database
    cannot be read, or is not migrated to where replicas say what they can do; the
    database check says why)."""
    import time

    from bot.store.postgres import Database, migrations
    from bot.store.replicas import PARK, Replicas

    storage = settings.storage
    latest = max((number for number, _, _ in migrations()), default=0)
    try:
        db = await Database.open(
            storage.url or "",
            password=settings.secret(storage.password_env),
            migrate=False,
            pool_size=1,
        )
    except StorageError:
        return None
    ttl = settings.replicas.lease_ttl_s + settings.replicas.max_clock_skew_s
    async with db:
        try:
            if await db.schema_version() != latest:
                return None
            live = await Replicas(db).live(since=time.time() - ttl)
        except StorageError:
            return None
    if not live:
        return CheckResult(name="replicas", ok=True, detail="none running")
    lacking = [r for r in live if PARK not in r.capabilities]
    names = ", ".join(f"{r.host}:{r.pid}" for r in live)
    if not lacking:
        return CheckResult(
            name="replicas", ok=True, detail=f"{len(live)} live ({names}); all park approvals"
        )
    old = ", ".join(f"{r.host}:{r.pid} ({r.id})" for r in lacking)
    return CheckResult(
        name="replicas",
        ok=True,
        warning=True,
        detail=f"{len(live)} live ({names}); parking is off: {old} runs a release that does "
        "not park, so cards wait in their turns and a stop expires them",
        fix="upgrade that replica (or stop it): parking comes back on by itself once every "
        "live replica parks (docs/operations.md, Several replicas)",
    )
