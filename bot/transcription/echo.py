"""A voice note's transcript posted back in the conversation (``transcription.echo``), so
its sender sees what the bot understood.

It goes through the outbox ledger as a reply of kind ``transcript`` of the message's inbox
entry: recorded ``sending`` before the send, under a key of its own, and settled after. A
message run again after a crash finds the row and posts nothing: the transcript is posted
at most once, and recovery never takes it for the message's answer.
"""

from __future__ import annotations

import structlog

from bot.channel import Channel
from bot.envelope import target_to_json
from bot.errors import StorageError
from bot.store import ReplyKind, ReplyStatus, Store, UnitOfWork
from bot.turn import REPLY_KEY_CHARS, TurnIdentity

log = structlog.get_logger(__name__)


def echo_key(turn: TurnIdentity) -> str:
    """The key the echo carries on the platform: the turn's reply key, marked ``t``."""
    return ("t" + turn.turn_id)[:REPLY_KEY_CHARS]


async def post_echo(store: Store, channel: Channel, turn: TurnIdentity, text: str) -> bool:
    """Post ``text`` once for ``turn``'s message (module doc); False when it was posted (or
    begun) before, or could not be recorded or sent."""
    key = turn.inbox
    try:
        if any(e.kind is ReplyKind.TRANSCRIPT for e in await store.outbox.of_entry(key)):
            return False
        await store.outbox.record(
            key,
            ReplyKind.TRANSCRIPT,
            reply_key=echo_key(turn),
            target=target_to_json(turn.envelope.reply_target),
            body=text,
        )
    except StorageError as exc:
        log.warning("transcript_echo_not_recorded", error=str(exc))
        return False
    work = UnitOfWork()
    try:
        sent = await channel.send(turn.envelope.reply_target, text, key=echo_key(turn))
    except Exception:
        # Boundary: a platform failure loses the echo, never the turn
        log.exception("transcript_echo_failed")
        work.settle_reply(key, ReplyKind.TRANSCRIPT, ReplyStatus.FAILED, error="send failed")
        await _commit(store, work)
        return False
    ids = [m.message_id for m in sent]
    work.settle_reply(key, ReplyKind.TRANSCRIPT, ReplyStatus.SENT, sent_ids=ids)
    await _commit(store, work)
    return True


async def _commit(store: Store, work: UnitOfWork) -> None:
    try:
        await store.commit(work)
    except StorageError as exc:
        log.warning("transcript_echo_not_settled", error=str(exc))
