"""Sessions: one queue and at most one running turn per session, a global cap on turns.

A session's worker task takes its queued turns in order and hands each to the turn runner
(:data:`bot.turn.TurnRunner`) once a slot of the global cap
(``agent.max_concurrent_turns``) is free; then it sends the reply and marks the inbox entry
``done`` or ``failed``. :class:`Sessions` owns the workers (one task group, open while
:meth:`Sessions.run` runs) and knows which messages are queued or running in this process.
Where several replicas share the database, each turn's inbox entry is taken just before it
runs (:meth:`Sessions.take_turns_with`, :mod:`~bot.gateway.handover`); one process takes
nothing and pays no trip for it.

A turn that finds the database server gone (:class:`~bot.errors.StorageUnavailable`) says
nothing and leaves its entry as it is: ``processing``, it is settled by start-up recovery's
rules once the database is back (the handover's sweep: by its recorded replies, its answer
in history, or the notice to ask again), exactly once, instead of a failure line now and a
notice later.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace

import structlog
from structlog.contextvars import clear_contextvars

from bot import telemetry
from bot.backoff import cancel_requested
from bot.config import DEFAULT_AGENT, OnInterrupted
from bot.envelope import IngressEnvelope
from bot.errors import StorageUnavailable
from bot.gateway.drain import Drain
from bot.gateway.ledger import ReplyLedger, may_run_again
from bot.gateway.log_fields import LogFields
from bot.gateway.sending import FAILURE_MESSAGE
from bot.store import InboxKey, InboxStatus, ReplyKind, Store
from bot.turn import CancelReason, SessionControl, TurnIdentity, TurnRunner

log = structlog.get_logger(__name__)

#: What every log line of a turn says of it
TURN_FIELDS = LogFields("envelope_id", "channel", "session", "turn_id", "agent", "route")

#: Edits kept for messages admitted but not queued yet (Sessions.edit_when_queued).
PENDING_EDITS = 1000

TakeTurn = Callable[[TurnIdentity], Awaitable[TurnIdentity | None]]
"""Takes a queued turn's inbox entry just before it runs: the turn as its entry reads now,
or None when it is not to run here (deleted, begun or taken elsewhere meanwhile)."""


def session_key_for(envelope: IngressEnvelope, *, per_user_in_groups: bool = False) -> str:
    """``kind.alias:conversation[:thread][:u<user>][:@agent]``; per user only in groups, and
    only when the channel asks for it; the agent (:mod:`bot.routing`) only when it is not
    ``default``, so that sessions from before agents existed keep their keys, and a room
    switched to another agent starts a new session."""
    key = f"{envelope.channel}:{envelope.conversation_id}"
    if envelope.thread_id:
        key += f":{envelope.thread_id}"
    if per_user_in_groups and envelope.is_group:
        key += f":u{envelope.sender.id}"
    if envelope.agent != DEFAULT_AGENT:
        key += f":@{envelope.agent}"
    return key


@dataclass(slots=True)
class _Session:
    queue: deque[TurnIdentity]
    control: SessionControl | None = None
    #: the turn taken off the queue (waiting for a slot or running)
    running: TurnIdentity | None = None
    worker_running: bool = False


class Sessions:
    """The per-session queues and their workers."""

    def __init__(
        self,
        *,
        store: Store,
        run_turn: TurnRunner,
        ledger: ReplyLedger,
        drain: Drain,
        max_concurrent_turns: int,
        on_interrupted: OnInterrupted = OnInterrupted.NOTIFY,
    ) -> None:
        self._store = store
        self._run_turn = run_turn
        self._ledger = ledger
        self._drain = drain
        self._sessions: dict[str, _Session] = {}
        self._slots = asyncio.Semaphore(max_concurrent_turns)
        self._on_interrupted = on_interrupted
        self._group: asyncio.TaskGroup | None = None
        # envelope ids queued or running in this process: recovery must not queue them again
        self._live: set[str] = set()
        # every envelope id queued in this process until start-up recovery has run: the
        # channels start first, so a message of this run may be in recovery's list and even
        # finished by the time recovery reaches it (None once recovery is over)
        self._queued_here: set[str] | None = set()
        # edits of messages admitted but not queued yet (edit_when_queued), oldest first
        self._edits: OrderedDict[InboxKey, IngressEnvelope] = OrderedDict()
        self._idle = asyncio.Event()  # set while _live is empty
        self._idle.set()
        self._settled = asyncio.Event()  # set (and replaced) each time a message is done
        self._take: TakeTurn | None = None

    def take_turns_with(self, take: TakeTurn) -> None:
        """Have ``take`` take each turn's entry just before it runs (several replicas)."""
        self._take = take

    async def run(self) -> None:
        """Own the session workers; lives until cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            group.create_task(self._ledger.settling())
            group.create_task(self._ledger.checking())
            try:
                await asyncio.Event().wait()
            finally:
                self._group = None

    def enqueue(self, turn: TurnIdentity) -> None:
        """Queue a turn behind its session's others (starting the session's worker), with
        the text of an edit that came while it was being admitted (:meth:`edit_when_queued`)."""
        edited = self._edits.pop(turn.inbox, None) if self._edits else None
        if edited is not None:
            turn = replace(turn, envelope=edited)
        self._live.add(turn.envelope.envelope_id)
        if self._queued_here is not None:
            self._queued_here.add(turn.envelope.envelope_id)
        self._idle.clear()
        session = self._sessions.get(turn.session_key)
        if session is None:
            session = _Session(queue=deque())
            self._sessions[turn.session_key] = session
        session.queue.append(turn)
        log.info("envelope_queued", session=turn.session_key, depth=len(session.queue))
        if not session.worker_running:
            session.worker_running = True
            self._spawn(self._worker(turn.session_key, session))

    def in_hand(self) -> frozenset[InboxKey]:
        """The entries this process has in hand: their turns queued, taken or running, or
        their reply sent and its settling to be tried again (:class:`ReplyLedger`). A turn
        lets go of its entry only after its outcome was written (or kept to be written), so
        an entry read ``processing`` after this was taken, and not in it, has no turn here
        that could still settle it."""
        held = set(self._ledger.unsettled())
        for session in self._sessions.values():
            if session.running is not None:
                held.add(session.running.inbox)
            held.update(turn.inbox for turn in session.queue)
        return frozenset(held)

    def is_live(self, envelope_id: str) -> bool:
        """Whether the message is queued or running in this process."""
        return envelope_id in self._live

    def admitted(self, envelope_id: str) -> None:
        """This process admitted the message to the inbox: until :meth:`recovered`, recovery
        leaves it to this run (the admission steps after the inbox may await before the
        message is queued)."""
        if self._queued_here is not None:
            self._queued_here.add(envelope_id)

    def queued_here(self, envelope_id: str) -> bool:
        """Whether this process admitted or queued the message (known until
        :meth:`recovered`)."""
        return self._queued_here is not None and envelope_id in self._queued_here

    def recovered(self) -> None:
        """Start-up recovery is over: stop remembering every message queued."""
        self._queued_here = None

    @property
    def idle(self) -> bool:
        """No turn is queued or running in this process."""
        return self._idle.is_set()

    async def wait_idle(self) -> None:
        """Return once no turn is queued or running (at once when none is)."""
        await self._idle.wait()

    async def wait_session_idle(self, session_key: str) -> None:
        """Return once ``session_key`` has no turn queued or running (at once when none)."""
        while (session := self._sessions.get(session_key)) is not None and (
            session.running is not None or session.queue
        ):
            await self._settled.wait()

    def replace_queued(self, inbox: InboxKey, envelope: IngressEnvelope) -> bool:
        """Put ``envelope`` in place of the queued message ``inbox`` names (an edit that came
        before its turn was taken off the queue). False when it is not queued here (its turn
        was taken, or it is unknown to this process)."""
        for session in self._sessions.values():
            for index, turn in enumerate(session.queue):
                if turn.inbox == inbox:
                    session.queue[index] = replace(turn, envelope=envelope)
                    self._live.discard(turn.envelope.envelope_id)
                    self._live.add(envelope.envelope_id)
                    return True
        return False

    def edit_when_queued(self, inbox: InboxKey, envelope: IngressEnvelope) -> None:
        """Queue the message ``inbox`` names as ``envelope`` says (an edit) when it is queued:
        it was admitted, and its admission's later steps have not queued it yet (a write's
        answer reaches its caller a loop step after a read queued behind it is answered).
        At most :data:`PENDING_EDITS` are kept (one whose message is never queued here, e.g.
        refused by a rate limit, is forgotten in time)."""
        self._edits[inbox] = envelope
        self._edits.move_to_end(inbox)
        while len(self._edits) > PENDING_EDITS:
            self._edits.popitem(last=False)

    def is_taken(self, inbox: InboxKey) -> bool:
        """Whether the turn of the message ``inbox`` names was taken off its queue and is
        waiting for a slot or running."""
        return any(
            s.running is not None and s.running.inbox == inbox for s in self._sessions.values()
        )

    def drop_queued(self, inbox: InboxKey) -> TurnIdentity | None:
        """Take the queued message ``inbox`` names out of its queue (deleted before its turn
        began); the turn dropped, or None when it is not queued here."""
        for session in self._sessions.values():
            for turn in session.queue:
                if turn.inbox == inbox:
                    session.queue.remove(turn)
                    self._forget(turn.envelope.envelope_id)
                    return turn
        return None

    def _forget(self, envelope_id: str) -> None:
        """The message is no longer queued or running."""
        self._live.discard(envelope_id)
        if not self._live:
            self._idle.set()
        settled, self._settled = self._settled, asyncio.Event()
        settled.set()

    def stop(self, session_key: str, reason: CancelReason) -> tuple[bool, list[TurnIdentity]]:
        """Cancel the session's running turn and take its queued ones out of the queue.
        Returns whether a turn was running and the turns dropped (their inbox entries are
        the caller's to mark)."""
        session = self._sessions.get(session_key)
        if session is None:
            return False, []
        stopped = bool(session.control and session.control.cancel(reason))
        dropped = list(session.queue)
        session.queue.clear()
        for turn in dropped:
            self._forget(turn.envelope.envelope_id)
        return stopped, dropped

    def winding_down(self, session_key: str, sender_id: str | None = None) -> bool:
        """Whether a turn cancelled earlier (``/stop``, shutdown) is still finishing in
        ``session_key``; with ``sender_id``, in any session of the conversation
        ``session_key`` (its threads included) and started by that sender."""
        for key, session in self._sessions.items():
            if sender_id is None and key != session_key:
                continue
            if sender_id is not None and not (
                key == session_key or key.startswith(session_key + ":")
            ):
                continue
            running, control = session.running, session.control
            if running is None or control is None or control.cancelled is None:
                continue
            if sender_id is None or running.envelope.sender.id == sender_id:
                return True
        return False

    def stop_sender(
        self, conversation: str, sender_id: str, reason: CancelReason
    ) -> tuple[list[TurnIdentity], list[TurnIdentity]]:
        """Cancel the turns ``sender_id`` started in every session of ``conversation``
        (``kind.alias:conversation_id``, its threads included) and take their queued ones
        out of the queues; others' turns are left alone. Returns the turns stopped and the
        turns dropped (their inbox entries are the caller's to mark)."""
        stopped: list[TurnIdentity] = []
        dropped: list[TurnIdentity] = []
        for key, session in list(self._sessions.items()):
            if key != conversation and not key.startswith(conversation + ":"):
                continue
            running, control = session.running, session.control
            if (
                running is not None
                and control is not None
                and running.envelope.sender.id == sender_id
                and control.cancel(reason)
            ):
                stopped.append(running)
            kept: deque[TurnIdentity] = deque()
            for turn in session.queue:
                if turn.envelope.sender.id == sender_id:
                    self._forget(turn.envelope.envelope_id)
                    dropped.append(turn)
                else:
                    kept.append(turn)
            session.queue = kept
        return stopped, dropped

    def cancel_running(self, reason: CancelReason) -> None:
        """Cancel every running turn (shutdown); queued ones stay queued."""
        for session in self._sessions.values():
            if session.control:
                session.control.cancel(reason)

    def queue_depth(self) -> int:
        return sum(len(s.queue) for s in self._sessions.values())

    async def _left_to_retry(self, turn: TurnIdentity) -> bool:
        """Whether a turn cut off by a stop is left ``processing`` for the next start to
        run again (``agent.on_interrupted = "retry"``, :func:`may_run_again`)."""
        if self._on_interrupted is not OnInterrupted.RETRY:
            return False
        return may_run_again(await self._store.inbox.get(turn.inbox))

    # -- workers ------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        if self._group is None:
            coro.close()
            raise RuntimeError("Gateway.run() is not running")
        self._group.create_task(coro)

    async def _worker(self, session_key: str, session: _Session) -> None:
        # the task was created with a copy of the context of the admission that spawned it:
        # its message's fields (and a scheduled run's job id) would go on every later line
        clear_contextvars()
        try:
            while session.queue:
                turn = session.queue.popleft()
                session.running = turn
                async with self._slots:
                    if self._take is None and self._drain.draining:
                        self._leave_for_restart([turn, *session.queue])
                        session.queue.clear()
                        break
                    try:
                        # a resumption's entry is parked, claimed with its parked row
                        taken = (
                            turn
                            if self._take is None or turn.resume is not None
                            else await self._taken(turn, session)
                        )
                        if taken is not None:
                            await self._process(taken, session)
                    except StorageUnavailable as exc:
                        # the database went away: the entry is settled once it is back
                        log.warning(
                            "turn_left_unsettled",
                            session=session_key,
                            turn_id=turn.turn_id,
                            error=str(exc),
                        )
                    except Exception:
                        if cancel_requested():  # a stop a library turned into an error
                            raise
                        # Boundary: the turn's bookkeeping failed (e.g. the database stayed
                        # locked); the other sessions and the gateway itself carry on.
                        log.exception(
                            "turn_bookkeeping_failed", session=session_key, turn_id=turn.turn_id
                        )
        finally:
            session.worker_running = False
            session.running = None
            if not session.queue and self._sessions.get(session_key) is session:
                del self._sessions[session_key]

    def _leave_for_restart(self, turns: list[TurnIdentity]) -> None:
        """One process stopping begins no queued turn: begun now, it could be cut off by the
        end of the drain (which waits only for the turns running as it began). Its inbox
        entry stays ``received``, and start-up recovery queues it again after the restart."""
        for turn in turns:
            log.info("turn_left_for_restart", session=turn.session_key, turn_id=turn.turn_id)
            self._forget(turn.envelope.envelope_id)

    async def _taken(self, turn: TurnIdentity, session: _Session) -> TurnIdentity | None:
        """The turn as ``take`` gives it back, or None (it is dropped here)."""
        assert self._take is not None
        taken: TurnIdentity | None = None
        try:
            taken = await self._take(turn)
        finally:
            if taken is None:  # not to run here, or the take failed
                session.running = None
                self._forget(turn.envelope.envelope_id)
        if taken is None:
            return None
        if taken.envelope.envelope_id != turn.envelope.envelope_id:
            self._live.discard(turn.envelope.envelope_id)
            self._live.add(taken.envelope.envelope_id)
        session.running = taken
        return taken

    async def _process(self, turn: TurnIdentity, session: _Session) -> None:
        envelope = turn.envelope
        control = SessionControl()
        session.control = control
        with self._drain.turn(), telemetry.turn(turn):
            bound = TURN_FIELDS.bind(
                envelope.envelope_id,
                turn.channel,
                turn.session_key,
                turn.turn_id,
                envelope.agent,
                envelope.route,
            )
            try:
                # the runner marks the entry "processing" with its first record (TurnRunner)
                try:
                    reply = await self._run_turn(turn, control)
                except StorageUnavailable as exc:
                    # nothing is said now: the entry is settled once the database is back
                    # (module docstring)
                    log.warning("turn_left_unsettled", error=str(exc))
                    return
                except Exception as exc:
                    # Boundary: a failing turn is logged and reported, never fatal.
                    log.exception("turn_failed")
                    await self._ledger.finish(
                        turn,
                        ReplyKind.FAILURE,
                        FAILURE_MESSAGE,
                        status=InboxStatus.FAILED,
                        error=type(exc).__name__,
                    )
                    return
                if reply.parked:
                    # the entry is parked (bot.store.parked): its resumption finishes it
                    log.info("turn_left_parked")
                    return
                if reply.interrupted and envelope.background:
                    # a scheduled run cut off by the shutdown stays unfinished: start-up
                    # recovery runs it again once, under its job's missed-run policy
                    log.info("background_run_interrupted", reason=reply.interrupted)
                    return
                if reply.interrupted and await self._left_to_retry(turn):
                    # agent.on_interrupted = "retry": nothing is said; the next start runs
                    # the turn again (recovery), as after a crash
                    log.info("turn_left_for_retry", reason=reply.interrupted)
                    return
                if reply.interrupted:
                    log.info("turn_interrupted", reason=reply.interrupted)
                await self._ledger.finish(
                    turn,
                    ReplyKind.NOTICE if reply.interrupted else ReplyKind.ANSWER,
                    reply.text or "",
                    status=InboxStatus.FAILED if reply.interrupted else InboxStatus.DONE,
                    error=reply.interrupted or (CancelReason.STOP if reply.stopped else None),
                    recorded=reply.recorded and not reply.interrupted,
                )
            finally:
                TURN_FIELDS.reset(bound)
                session.control = None
                session.running = None
                self._forget(envelope.envelope_id)
