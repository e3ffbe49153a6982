"""Admission step: a busy database is tried again; a sender whose message could not be
admitted is told so instead of being dropped without a word. A database server that cannot
be reached (several replicas on PostgreSQL) refuses the message instead: it is raised to the
adapter, which leaves the platform's event unconfirmed, so the platform delivers it again,
to this replica later or to another one.

It wraps the rest of admission, so a retry runs all of it again (access check included).
"""

from __future__ import annotations

import asyncio

import structlog

from bot.errors import StorageError, StorageUnavailable
from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import FAILURE_MESSAGE, Replies

log = structlog.get_logger(__name__)

ADMIT_ATTEMPTS = 3


class StorageRetry:
    """Runs the rest of admission up to :data:`ADMIT_ATTEMPTS` times while the database is
    busy; any other storage error (or the last busy one) sends :data:`FAILURE_MESSAGE`."""

    def __init__(self, replies: Replies) -> None:
        self._replies = replies

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        for attempt in range(1, ADMIT_ATTEMPTS + 1):
            try:
                await call_next(arrival)
                return
            except StorageUnavailable as exc:
                log.warning("envelope_refused", reason="database unavailable", error=str(exc))
                raise
            except StorageError as exc:
                # Busy (another writer holds the database): try again a little later.
                # Anything else fails the same way again. Either way the sender is told
                # instead of the message being dropped without a word.
                transient = exc.busy  # StorageBusy: another writer holds the database
                if transient and attempt < ADMIT_ATTEMPTS:
                    log.warning("envelope_storage_retry", attempt=attempt, error=str(exc))
                    await asyncio.sleep(0.5 * attempt)
                    continue
                log.error("envelope_failed", error=str(exc), transient=transient)
                await self._replies.send(arrival.envelope, FAILURE_MESSAGE)
                return
