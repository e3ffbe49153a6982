"""Recovery after a restart: what the inbox says was left unfinished.

An entry still ``received`` left no trace (its turn never began) and is queued again; one
``processing`` was cut off mid-turn, so it is marked ``failed`` and its sender is told to
ask again (:data:`SHUTDOWN_MESSAGE`). A message from a channel that does not replay
(``Capabilities.replay_on_restart`` false: the console, whose reader is gone with the
process that read it) is marked ``failed`` either way, quietly: nobody is asked to repeat
it and it is never answered in a later run. Messages already queued or running in this
process are left alone.
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
#: The inbox error of a message dropped at start-up because its channel does not replay.
NOT_REPLAYED = "not replayed after restart"


async def recover(*, store: Store, sessions: Sessions, replies: Replies) -> tuple[int, int]:
    """Re-queue messages that never started, and tell the senders of messages whose turn was
    interrupted to ask again; drop, without a word, those whose channel does not replay.
    Returns (requeued, interrupted)."""
    requeued = interrupted = dropped = 0
    for entry in await store.inbox.unfinished():
        if not entry.payload or sessions.is_live(entry.envelope_id):
            continue
        envelope = envelope_from_json(entry.payload)
        if not envelope.capabilities.replay_on_restart:
            await store.inbox.mark(entry.key, InboxStatus.FAILED, error=NOT_REPLAYED)
            log.info(
                "inbox_entry_not_replayed",
                channel=entry.key.channel,
                message_id=entry.key.message_id,
                was=entry.status.value,
            )
            dropped += 1
        elif entry.status is InboxStatus.RECEIVED:
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
    if requeued or interrupted or dropped:
        log.info("inbox_recovered", requeued=requeued, interrupted=interrupted, dropped=dropped)
    return requeued, interrupted
