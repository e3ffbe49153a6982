"""Recovery after a restart: what the inbox says was left unfinished.

An entry still ``received`` left no trace (its turn never began) and is queued again; one
``processing`` was cut off mid-turn, so it is marked ``failed`` and its sender is told to
ask again (:data:`SHUTDOWN_MESSAGE`). Messages already queued or running in this process
are left alone.
"""

from __future__ import annotations

import uuid

import structlog

from bot.envelope import envelope_from_json
from bot.gateway.sending import Replies
from bot.gateway.sessions import Sessions
from bot.store import InboxStatus, Store
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

SHUTDOWN_MESSAGE = "⏹ The bot is restarting; this request was interrupted. Please ask again."


async def recover(*, store: Store, sessions: Sessions, replies: Replies) -> tuple[int, int]:
    """Re-queue messages that never started, and tell the senders of messages whose turn was
    interrupted to ask again. Returns (requeued, interrupted)."""
    requeued = interrupted = 0
    for entry in await store.inbox.unfinished():
        if not entry.payload or sessions.is_live(entry.envelope_id):
            continue
        envelope = envelope_from_json(entry.payload)
        if entry.status is InboxStatus.RECEIVED:
            sessions.enqueue(
                TurnIdentity(
                    envelope=envelope, session_key=entry.session_key, turn_id=uuid.uuid4().hex
                )
            )
            requeued += 1
        else:
            await store.inbox.mark(entry.key, InboxStatus.FAILED, error="interrupted by restart")
            await replies.send(envelope, SHUTDOWN_MESSAGE)
            interrupted += 1
    if requeued or interrupted:
        log.info("inbox_recovered", requeued=requeued, interrupted=interrupted)
    return requeued, interrupted
