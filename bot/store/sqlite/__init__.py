"""The SQLite engine: everything of ``bot/store`` that is SQLite's and not the tables'.

The repositories (``bot/store/inbox.py``, ``history.py``, …) write their statements once, in
SQL other engines speak too (:mod:`bot.store.statements`); what this package holds is what a
PostgreSQL engine would hold differently (see the Storage section of ``docs/architecture.md``):

* :mod:`~bot.store.sqlite.database`: :class:`Database`, the engine the store's repositories
  are given: how statements and units of work travel;
* :mod:`~bot.store.sqlite.transaction`: :class:`Transaction`, the interactive write
  transaction;
* :mod:`~bot.store.sqlite.trip`: one round trip to the database thread (batching);
* :mod:`~bot.store.sqlite.worker`: the thread that owns the connection, and its job queue;
* :mod:`~bot.store.sqlite.connection`: opening the connection and its pragmas;
* :mod:`~bot.store.sqlite.schema` and ``migrations/``: the numbered migrations;
* :mod:`~bot.store.sqlite.errors`: ``sqlite3`` errors mapped into the ``StorageError`` tree;
* :mod:`~bot.store.sqlite.memory_search`: the one statement that is not portable;
* :mod:`~bot.store.sqlite.vacuum`: giving freed pages back (incremental vacuum).

Only this package imports ``sqlite3``.
"""

from __future__ import annotations

from bot.store.engine import Compaction
from bot.store.sqlite.database import Database
from bot.store.sqlite.transaction import Transaction

__all__ = ["Compaction", "Database", "Transaction"]
