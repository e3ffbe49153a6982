"""Connecting to PostgreSQL: the URL, the pool and how each connection is set up.

The URL comes from ``[storage] url`` and names no password; the password comes from the
environment variable ``[storage] password_env`` names (as every other secret) and is handed
to the driver alone, never put in a message: :func:`describe` is the URL as messages and
logs show it, without credentials or options.

Every connection of the pool is set up alike (:func:`_setup`): PostgreSQL's ``numeric``
(what ``SUM`` of an integer column answers) comes back as an ``int`` when it is whole and a
``float`` otherwise, as SQLite answers; a lock waited on longer than :data:`LOCK_TIMEOUT_MS`
fails as :class:`~bot.errors.StorageBusy` (SQLite's busy timeout); a session idle inside a
transaction for :data:`IDLE_IN_TRANSACTION_TIMEOUT_MS` is ended by the server, so a replica
cut off mid-transaction holds no lock against the others; a connection handed back
is only rolled back if a transaction is still open, not reset with a round trip (the engine
leaves no other session state on it).

Nothing waits on the server for ever: opening a connection gives up after ``[storage]
connect_timeout_s``, a statement after ``[storage] command_timeout_s`` (a server that stopped
answering, a connection black-holed on the way), both as
:class:`~bot.errors.StorageUnavailable`. Migrations alone run on a connection of their own
without the statement timeout (:func:`connect_unbounded`): they wait for each other's lock as
long as it takes, and a large table's new index may take longer than a turn's statement.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import asyncpg

LOCK_TIMEOUT_MS = 5000
"""How long a statement waits for a lock (a row, or the interactive transactions' lock)
before failing as busy: SQLite's ``busy_timeout``."""

IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000
"""How long the server lets a session sit idle inside a transaction before it ends the
session (``idle_in_transaction_session_timeout``), rolling back and letting its locks go. A
unit's statements follow each other at once, so only a client that can no longer be heard
stays idle that long: a replica whose network to the database went silent in the middle of
a transaction (its lease renewal, a decision) would otherwise hold those rows until TCP gave
up on it, hours later, and the other replicas could not take its leases over. Copying a
SQLite database in (:mod:`bot.store.postgres.load`) reads between its statements and turns
it off for its own transaction."""

STATEMENT_CACHE_SIZE = 512
"""Prepared statements each connection keeps (asyncpg's default is 100; the repositories
write a few hundred distinct statements, each prepared once per connection)."""

SCHEMES = ("postgresql", "postgres")


def is_postgres_url(url: str) -> bool:
    return urlsplit(url).scheme in SCHEMES


def describe(url: str) -> str:
    """``url`` without its password and options: ``postgresql://user@host:port/db``."""
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def url_password(url: str) -> bool:
    """Whether ``url`` carries a password (which belongs in ``password_env`` instead)."""
    parts = urlsplit(url)
    return parts.password is not None or "password=" in parts.query.lower()


def _number(text: str) -> int | float:
    return int(text) if text.lstrip("-").isdigit() else float(text)


async def _setup(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "numeric", schema="pg_catalog", encoder=str, decoder=_number, format="text"
    )


async def _reset(conn: asyncpg.Connection) -> None:
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


def _server_settings() -> dict[str, str]:
    return {
        "application_name": "hatchway",
        "lock_timeout": str(LOCK_TIMEOUT_MS),
        "idle_in_transaction_session_timeout": str(IDLE_IN_TRANSACTION_TIMEOUT_MS),
    }


async def create_pool(
    url: str,
    *,
    password: str | None,
    size: int,
    connect_timeout_s: float,
    command_timeout_s: float | None = None,
) -> asyncpg.Pool:
    """A pool of at most ``size`` connections to ``url`` (one opened now, so a server that
    cannot be reached fails here); each statement fails after ``command_timeout_s`` (None:
    never)."""
    options: dict[str, Any] = {
        "password": password,
        "timeout": connect_timeout_s,
        "command_timeout": command_timeout_s,
        "statement_cache_size": STATEMENT_CACHE_SIZE,
        "server_settings": _server_settings(),
    }
    pool: asyncpg.Pool = await asyncpg.create_pool(
        url,
        min_size=1,
        max_size=size,
        init=_setup,
        reset=_reset,
        max_inactive_connection_lifetime=300.0,
        **options,
    )
    return pool


async def connect_unbounded(
    url: str, *, password: str | None, connect_timeout_s: float
) -> asyncpg.Connection:
    """One connection to ``url`` whose statements may take as long as they take (the
    migrations'); opening it still gives up after ``connect_timeout_s``."""
    conn: asyncpg.Connection = await asyncpg.connect(
        url,
        password=password,
        timeout=connect_timeout_s,
        statement_cache_size=0,
        server_settings=_server_settings(),
    )
    return conn
