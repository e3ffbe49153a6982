"""Admission step: the persisted inbox, which makes each platform message run once.

The message is written to the inbox (with its envelope, so that a restart can resume or
answer it) before it is queued; a platform redelivery of a message already there (same
channel and platform message id) is dropped here.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from bot.crashpoints import crash_point
from bot.envelope import envelope_to_json
from bot.gateway.admission import Admit, Arrival
from bot.store import InboxKey, Store

log = structlog.get_logger(__name__)


class InboxDedupe:
    """Records the message as ``received``; a duplicate goes no further."""

    def __init__(self, store: Store, on_admitted: Callable[[str], None]) -> None:
        self._store = store
        self._on_admitted = on_admitted

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        envelope = arrival.envelope
        # Before the write, not after it: start-up recovery, running beside the channels,
        # must never see this run's entry as one the process before left. Marked after the
        # write, recovery's read of the unfinished entries could return between the commit
        # and this coroutine's wake-up (the store answers from its own thread) and queue the
        # message a second time: two turns, two answers. The id is this delivery's own (an
        # adapter's fresh envelope), so a duplicate refused below marks no earlier entry.
        self._on_admitted(envelope.envelope_id)
        admitted = await self._store.inbox.admit(
            InboxKey(channel=str(envelope.channel), message_id=envelope.message_id),
            envelope_id=envelope.envelope_id,
            session_key=arrival.session_key,
            payload=envelope_to_json(envelope),
            sender_id=envelope.sender.id,
        )
        if not admitted:
            log.info("envelope_duplicate", message_id=envelope.message_id)
            return
        crash_point("after_admit")
        await call_next(arrival)
