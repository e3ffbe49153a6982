"""The outbox ledger, gateway side: each reply to a message is recorded before it is sent
and settled after, and a reply whose fate a crash hid is settled at start-up.

Every reply (a turn's answer, the failure line, the notice to ask again) is recorded
``sending`` before it leaves. A turn's answer to a channel that can check a delivery
(:class:`bot.channel.DeliveryCheck`: Slack, Discord, Telegram) is recorded with the answer's
history, in the same trip (:class:`bot.agent.turn.TurnState`): a crash between that record
and the request is settled by the check, which finds nothing and sends it again. Every other
reply is recorded in one trip of its own just before it leaves, as late as possible: where
nothing can look, the window in which a crash leaves a reply whose fate is unknown is the
request's own flight. After the send, one
transaction settles the reply (``sent`` with the platform's message ids, or ``failed``) and
marks the inbox entry, so an entry is ``done`` exactly when its reply's fate is known.

At start-up, an entry cut off mid-turn (``processing``) is settled by its replies
(:meth:`ReplyLedger.recover`):

* a reply ``sent`` (or ``failed``): the sender heard back (or the platform refused for
  good); the entry is marked and nothing more is sent;
* a reply still ``sending`` may or may not have reached the platform. Where the channel
  can check (:class:`bot.channel.DeliveryCheck`: Slack and Discord read their history,
  Telegram probes with edits), it is looked for: found, it is settled ``sent``; not there,
  the recorded text is sent again under the same key; when the check cannot decide, the
  recorded text is sent again with :data:`REPEAT_MARKER` in front, so a reader who has it
  already knows this is a repeat (``reply_undecided``, counted by the ``undecided`` hook:
  the metric ``hatchway_replies_undecided``). Where the channel's check writes to the
  platform (:class:`bot.channel.BackgroundDeliveryCheck`: Telegram), recovery settles the
  entry after start-up, in the background (:meth:`ReplyLedger.defer`,
  :meth:`ReplyLedger.checking`), the entry held meanwhile. Where the channel has no check
  at all, the reply counts as delivered (``reply_unconfirmed``);
* no reply, but the run's final answer in history (it was cut off between the two): the
  answer was never sent, and is sent now (:meth:`ReplyLedger.answer_again`);
* nothing: the turn was cut off before its answer; the caller tells the sender to ask
  again (or runs the turn again, under ``agent.on_interrupted = "retry"``).

The same rules settle, without a restart, an entry a live process left ``processing``
because the database went away under its turn (:mod:`~bot.gateway.handover`'s sweep). A
reply that cannot be recorded because the database cannot be reached
(:class:`~bot.errors.StorageUnavailable`) is not sent: its turn is left to them. When the
reply went out and only the transaction that settles it failed, that transaction is kept
here and committed again (:meth:`ReplyLedger.settling`), so the entry is settled by what
happened before any restart, on either engine.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import structlog
from structlog.contextvars import bound_contextvars

from bot.channel import BackgroundDeliveryCheck, SentMessage
from bot.crashpoints import crash_point
from bot.envelope import DeliveryTarget, IngressEnvelope, target_from_json, target_to_json
from bot.errors import StorageError, StorageUnavailable
from bot.gateway.sending import Replies
from bot.store import (
    InboxKey,
    InboxStatus,
    OutboxEntry,
    ReplyKind,
    ReplyStatus,
    Store,
    UnitOfWork,
)
from bot.store.inbox import InboxEntry
from bot.store.outage import OutageLog
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

#: The outbox error of a reply whose send began before a crash and could not be confirmed.
UNCONFIRMED = "unconfirmed: the send began before a restart"
SEND_FAILED = "send failed"
#: The outbox error of a reply no check could decide, sent again marked.
UNDECIDED = "undecided: sent again marked as a possible repeat"
#: What a reply sent again after an undecided check begins with.
REPEAT_MARKER = (
    "↻ Sent again after a restart: this reply may already be above, once. It is repeated "
    "in full below."
)

Settled = Literal["sent", "confirmed", "resent", "undecided", "unconfirmed", "failed"]
#: How often the settling of replies whose transaction failed is tried again.
SETTLE_AGAIN_S = 1.0
#: How many runs of one message may begin under ``agent.on_interrupted = "retry"``.
MAX_RUNS = 2


def may_run_again(entry: InboxEntry | None) -> bool:
    """Whether a cut-off run may run again under ``agent.on_interrupted = "retry"``: no
    tool with side effects may have run in it, and fewer than :data:`MAX_RUNS` began."""
    return entry is not None and not entry.side_effects and entry.attempts < MAX_RUNS


class ReplyLedger:
    """Sends and settles replies through the outbox ledger (module docstring)."""

    def __init__(
        self,
        store: Store,
        replies: Replies,
        *,
        undecided: Callable[[str], None] | None = None,
    ) -> None:
        self._store = store
        self._replies = replies
        self._undecided = undecided
        #: per inbox entry, the transaction settling a reply that went out, which failed
        #: (tried again by :meth:`settling`)
        self._unsettled: dict[InboxKey, UnitOfWork] = {}
        #: entries whose replies a background check settles (:meth:`checking`)
        self._deferred: set[InboxKey] = set()
        self._later: asyncio.Queue[tuple[InboxKey, Callable[[], Awaitable[object]]]] = (
            asyncio.Queue()
        )
        self._checks_open = asyncio.Event()

    def unsettled(self) -> frozenset[InboxKey]:
        """The entries whose reply went out and whose settling waits to be tried again, and
        those a background check is to settle."""
        return frozenset(self._unsettled) | frozenset(self._deferred)

    def open_checks(self) -> None:
        """Start-up recovery is over: the deferred work may run (:meth:`checking`)."""
        self._checks_open.set()

    def checks_later(self, target: DeliveryTarget) -> bool:
        """Whether replies to ``target`` are checked in the background (the channel's
        :class:`~bot.channel.BackgroundDeliveryCheck`)."""
        check = self._replies.check(target)
        return isinstance(check, BackgroundDeliveryCheck) and check.checks_later()

    def defer(self, key: InboxKey, work: Callable[[], Awaitable[object]]) -> None:
        """Run ``work`` (recovery's settling of the entry ``key``) after start-up, in the
        background, the entry held meanwhile (:meth:`unsettled`)."""
        if key in self._deferred:
            return
        self._deferred.add(key)
        self._later.put_nowait((key, work))
        log.info("recovery_deferred", channel=key.channel, message_id=key.message_id)

    async def checking(self) -> None:
        """Run the deferred work, each in a task of its own, once :meth:`open_checks` was
        called; until cancelled."""
        await self._checks_open.wait()
        async with asyncio.TaskGroup() as group:
            while True:
                key, work = await self._later.get()
                group.create_task(self._run_deferred(key, work))

    async def _run_deferred(self, key: InboxKey, work: Callable[[], Awaitable[object]]) -> None:
        try:
            await work()
        except Exception:
            # Boundary: the entry stays ``processing`` and the next start recovers it.
            log.exception(
                "recovery_deferred_failed", channel=key.channel, message_id=key.message_id
            )
        finally:
            self._deferred.discard(key)

    async def finish(
        self,
        turn: TurnIdentity,
        kind: ReplyKind,
        text: str,
        *,
        status: InboxStatus,
        error: str | None = None,
        recorded: bool = False,
    ) -> None:
        """Send ``text`` as ``turn``'s reply (nothing for no text or a silent envelope):
        recorded ``sending`` first (``recorded``: the agent recorded it with the answer's
        history), then settled with the inbox entry marked ``status``, in one transaction.
        StorageUnavailable from the record: nothing was sent (module docstring); a failed
        settling is kept to be tried again, and raised."""
        sends = bool(text) and turn.envelope.announce
        recorded = sends and recorded
        if sends and not recorded:
            recorded = True
            try:
                await self._store.outbox.record(
                    turn.inbox,
                    kind,
                    reply_key=turn.reply_key,
                    target=target_to_json(turn.envelope.reply_target),
                    body=text,
                )
            except StorageUnavailable:
                raise
            except StorageError:
                # the reply still goes out: unrecorded is better than unsaid
                log.exception("reply_record_failed")
                recorded = False
        if sends:
            crash_point("after_record")
        sent = await self._send(turn, text) if sends else None
        work = UnitOfWork()
        if recorded:
            _settle(work, turn.inbox, kind, sent)
        work.mark_inbox(turn.inbox, status, error)
        try:
            await self._store.commit(work)
        except StorageError:
            self._unsettled[turn.inbox] = work
            raise
        crash_point("after_mark")

    async def settling(self, every_s: float = SETTLE_AGAIN_S) -> None:
        """Try the failed settlings again every ``every_s`` until cancelled."""
        outage = OutageLog("reply_settling", quiet=(StorageError,))
        while True:
            await asyncio.sleep(every_s)
            if not self._unsettled:
                continue
            try:
                await self.settle_again()
            except StorageError as exc:
                outage.failed(exc)
            else:
                outage.succeeded()

    async def settle_again(self) -> int:
        """Commit each kept settling once more; how many went through. Each is kept until
        its commit succeeds (a sweep leaves its entry alone meanwhile)."""
        settled = 0
        for key, work in list(self._unsettled.items()):
            await self._store.commit(work)
            if self._unsettled.get(key) is work:
                del self._unsettled[key]
            settled += 1
            log.info("reply_settled_late", channel=key.channel, message_id=key.message_id)
        return settled

    async def _send(self, turn: TurnIdentity, text: str) -> Sequence[SentMessage] | None:
        return await self._replies.deliver(turn.envelope.reply_target, text, key=turn.reply_key)

    async def notify(self, turn: TurnIdentity, text: str, *, error: str) -> None:
        """Tell the sender of a cut-off message ``text`` (the notice to ask again) and mark
        the entry ``failed`` with ``error``: recorded first, so a crash while telling is not
        followed by a second notice."""
        await self.finish(turn, ReplyKind.NOTICE, text, status=InboxStatus.FAILED, error=error)

    async def answer_again(self, entry: InboxEntry, envelope: IngressEnvelope) -> bool:
        """Send the final answer a cut-off run left in history with no reply recorded (it
        was never sent) and mark the entry ``done``; False when the run left no answer."""
        if entry.turn_id is None:
            return False
        answer = await self._store.history.answer_of(entry.session_key, entry.turn_id)
        if answer is None:
            return False
        turn = TurnIdentity(
            envelope=envelope, session_key=entry.session_key, turn_id=uuid.uuid4().hex
        )
        # its lines name the run whose answer it is
        with bound_contextvars(turn_id=entry.turn_id, session=entry.session_key):
            await self.finish(turn, ReplyKind.ANSWER, answer, status=InboxStatus.DONE)
            log.info("answer_sent_after_restart", message_id=entry.key.message_id)
        return True

    async def recover(
        self, key: InboxKey, envelope: IngressEnvelope, *, interrupted: str
    ) -> Settled | None:
        """Settle a cut-off entry by its recorded replies (module docstring); None when it
        has none (the caller decides). An entry whose answer was settled is marked
        ``done``; one whose failure line or notice was, ``failed`` with ``interrupted``."""
        # a transcript posted back is not a reply to the message: it settles nothing
        entries = [
            e for e in await self._store.outbox.of_entry(key) if e.kind is not ReplyKind.TRANSCRIPT
        ]
        if not entries:
            return None
        outcome: Settled = "sent"
        work = UnitOfWork()
        for entry in entries:
            if entry.status is ReplyStatus.SENDING:
                outcome = await self._recover_sending(entry, envelope, work)
        answered = any(e.kind is ReplyKind.ANSWER for e in entries)
        if answered:
            work.mark_inbox(key, InboxStatus.DONE)
        else:
            work.mark_inbox(key, InboxStatus.FAILED, interrupted)
        await self._store.commit(work)
        log.info(
            "reply_recovered",
            channel=key.channel,
            message_id=key.message_id,
            outcome=outcome,
            kinds=[e.kind.value for e in entries],
        )
        return outcome

    async def _recover_sending(
        self, entry: OutboxEntry, envelope: IngressEnvelope, work: UnitOfWork
    ) -> Settled:
        """Settle one reply whose send was begun and never confirmed."""
        target = target_from_json(entry.target)
        check = self._replies.check(target)
        found: Sequence[SentMessage] | None = None
        if check is not None:
            try:
                found = await check.find_delivered(
                    target,
                    key=entry.reply_key,
                    text=entry.body,
                    # a scheduled run answers no platform message: look at recent posts
                    after_message_id=None if envelope.background else envelope.message_id,
                )
            except Exception:
                # Boundary: a failed check is a check that could not decide.
                log.exception("reply_check_failed")
        if found:
            _settle(work, entry.key, entry.kind, found)
            return "confirmed"
        if found is None and check is None:
            log.warning(
                "reply_unconfirmed",
                channel=entry.key.channel,
                message_id=entry.key.message_id,
                kind=entry.kind.value,
                checked=False,
            )
            work.settle_reply(entry.key, entry.kind, ReplyStatus.SENT, error=UNCONFIRMED)
            return "unconfirmed"
        if found is None:
            # never dropped in silence: sent again, saying it may be a repeat
            log.warning(
                "reply_undecided",
                channel=entry.key.channel,
                message_id=entry.key.message_id,
                kind=entry.kind.value,
            )
            if self._undecided is not None:
                self._undecided(target.channel.kind)
            marked = f"{REPEAT_MARKER}\n\n{entry.body}"
            again = await self._replies.deliver(target, marked, key=entry.reply_key)
            if again is None:
                _settle(work, entry.key, entry.kind, None)
                return "failed"
            work.settle_reply(
                entry.key,
                entry.kind,
                ReplyStatus.SENT,
                sent_ids=[m.message_id for m in again],
                error=UNDECIDED,
            )
            return "undecided"
        sent = await self._replies.deliver(target, entry.body, key=entry.reply_key)
        _settle(work, entry.key, entry.kind, sent)
        return "resent" if sent is not None else "failed"


def _settle(
    work: UnitOfWork, key: InboxKey, kind: ReplyKind, sent: Sequence[SentMessage] | None
) -> None:
    if sent is None:
        work.settle_reply(key, kind, ReplyStatus.FAILED, error=SEND_FAILED)
    else:
        work.settle_reply(key, kind, ReplyStatus.SENT, sent_ids=[m.message_id for m in sent])
