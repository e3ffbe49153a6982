"""The PostgreSQL engine (``[storage] url``): everything of ``bot/store`` that is
PostgreSQL's and not the tables'.

The repositories write their statements once for both engines (:mod:`bot.store.statements`);
this package holds what PostgreSQL does differently from :mod:`bot.store.sqlite` (see the
Storage section of ``docs/architecture.md``):

* :mod:`~bot.store.postgres.database`: :class:`Database`, a pool of connections, how
  statements and units of work travel;
* :mod:`~bot.store.postgres.transaction`: the interactive write transaction (queued on an
  advisory lock, as SQLite's ``BEGIN IMMEDIATE``);
* :mod:`~bot.store.postgres.connection`: the URL, the pool, each connection's setup;
* :mod:`~bot.store.postgres.placeholders`: ``?`` numbered ``$1…``, once per statement text;
* :mod:`~bot.store.postgres.schema` and ``migrations/``: the numbered migrations, applied
  under an advisory lock;
* :mod:`~bot.store.postgres.errors`: SQLSTATEs mapped into the ``StorageError`` tree;
* :mod:`~bot.store.postgres.memory_search`: ``tsvector`` and ``ts_rank``;
* :mod:`~bot.store.postgres.load`: rows copied into an empty database in one transaction
  (``hatchway db migrate-to``).

Only this package imports ``asyncpg``.
"""

from __future__ import annotations

from bot.store.postgres.connection import describe, is_postgres_url, url_password
from bot.store.postgres.database import MIN_SERVER_VERSION, Database
from bot.store.postgres.schema import migrations
from bot.store.postgres.transaction import Transaction

__all__ = [
    "MIN_SERVER_VERSION",
    "Database",
    "Transaction",
    "describe",
    "is_postgres_url",
    "migrations",
    "url_password",
]
