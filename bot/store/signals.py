"""Signals between the processes of one database: a notification wakes whoever listens.

Replicas over one PostgreSQL database wake each other through it (``LISTEN``/``NOTIFY``,
:mod:`bot.store.postgres.signals`): a message handed over to the replica that owns its
session, an approval decided on another replica than the one whose turn waits on it. A
signal may be lost (a listening connection that dropped hears nothing until it is back), so
every listener also polls: a signal only makes it sooner. A notification is sent when the
statement runs, not with a transaction: send it after what it announces has committed.

One process over SQLite has nobody else to wake: :class:`NoSignals` hears nothing, and the
in-process wake-ups (an :class:`asyncio.Event` per waiting approval, the session queues) do
the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

MAX_PAYLOAD_BYTES = 7999
"""The most a notification's payload may carry, in UTF-8 bytes: PostgreSQL refuses one of
8000 bytes or more. A sender keeps its payloads well under it (an id, a key: what the
listener needs to read the rest from the database); :meth:`Signals.notify` refuses a longer
one with :class:`~bot.errors.StorageError` and sends nothing."""

Listener = Callable[[str], None]
"""Called on the event loop with each notification's payload; it must not block (it hands
the work to a task of its own)."""


class Signals(Protocol):
    """Notifications on named channels (lower-case identifiers) with a text payload of at
    most :data:`MAX_PAYLOAD_BYTES` in UTF-8."""

    async def notify(self, channel: str, payload: str) -> None:
        """Wake every process listening on ``channel`` (this one too). A payload longer
        than :data:`MAX_PAYLOAD_BYTES` raises :class:`~bot.errors.StorageError`."""
        ...

    async def listen(self, channel: str, listener: Listener) -> None:
        """Call ``listener`` with the payload of every notification on ``channel`` from now
        on. Never fails for want of a connection: listening starts once there is one."""
        ...

    async def unlisten(self, channel: str, listener: Listener) -> None:
        """Stop calling ``listener``."""
        ...

    async def aclose(self) -> None:
        """Stop listening (the store closes)."""
        ...


class NoSignals:
    """One process: nobody else to wake, nothing to hear."""

    async def notify(self, channel: str, payload: str) -> None:
        return None

    async def listen(self, channel: str, listener: Listener) -> None:
        return None

    async def unlisten(self, channel: str, listener: Listener) -> None:
        return None

    async def aclose(self) -> None:
        return None
