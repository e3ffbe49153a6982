"""The database the configuration names, opened: the daemon's and the operator commands'.

The store knows nothing of the configuration (``bot.store`` sits below ``bot.config`` in the
layers); this is where ``[storage]`` becomes a :class:`~bot.store.Store`.
"""

from __future__ import annotations

from bot.config import Settings
from bot.store import Store


async def open_store(settings: Settings, *, migrate: bool = True, create: bool = True) -> Store:
    """Open the database ``[storage]`` names: PostgreSQL when ``url`` is set (its password
    from the variable ``password_env`` names), else the SQLite file ``path`` (not made when
    ``create`` is false; a PostgreSQL database is never created here)."""
    storage = settings.storage
    if storage.url:
        return await Store.open_postgres(
            storage.url,
            password=settings.secret(storage.password_env),
            migrate=migrate,
            pool_size=storage.pool_size,
            command_timeout_s=storage.command_timeout_s,
            connect_timeout_s=storage.connect_timeout_s,
        )
    return await Store.open(settings.database_path(), migrate=migrate, create=create)
