"""The gateway: from an inbound envelope to a turn, exactly once per platform message.

For each envelope, in this order (composed here and only here):

1. access policy (allow-lists, DM/group policy, mention gating, pairing) — a refused
   message gets no LLM call, at most one polite line;
2. session key (``kind.alias:conversation[:thread]``, per user in groups when configured);
3. chat commands: ``/stop`` cancels the session's running turn, ``/new`` starts a new session;
4. dedupe against the persisted inbox — a platform redelivery is a no-op;
5. the session's queue: one turn at a time per session, later messages wait their turn;
   a global semaphore caps concurrent turns.

The gateway owns the session worker tasks (one task group, started by :meth:`Gateway.run`).
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from structlog.contextvars import bind_contextvars, reset_contextvars

from bot.channel import ApprovalCard, ApprovalClick, Channel, ClickVerdict
from bot.config import Settings
from bot.envelope import ChannelRef, IngressEnvelope, envelope_from_json, envelope_to_json
from bot.errors import StorageError
from bot.store import InboxKey, InboxStatus, Store
from bot.store.db import busy_error
from bot.tools.cancellation import SHUTDOWN

log = structlog.get_logger(__name__)

ADMIT_ATTEMPTS = 3
FAILURE_MESSAGE = "⚠️ Something went wrong while answering; the error was logged. Please try again."
SHUTDOWN_MESSAGE = "⏹ The bot is restarting; this request was interrupted. Please ask again."


class AccessOutcome(Protocol):
    @property
    def allowed(self) -> bool: ...

    @property
    def reply(self) -> str | None: ...

    @property
    def reason(self) -> str: ...


class AccessCheck(Protocol):
    """Who may talk to the bot (see :mod:`bot.access`)."""

    async def check(self, envelope: IngressEnvelope) -> AccessOutcome: ...


class ClickSink(Protocol):
    """Where approval answers go (see :class:`bot.approval.service.ApprovalService`)."""

    async def click(self, click: ApprovalClick) -> ClickVerdict: ...

    async def refusal(
        self, *, channel: ChannelRef, approval_id: str, user_id: str, user_roles: tuple[str, ...]
    ) -> ClickVerdict | None: ...

    async def card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """One admitted message, ready for the agent."""

    envelope: IngressEnvelope
    session_key: str
    turn_id: str

    @property
    def inbox(self) -> InboxKey:
        """The message's inbox entry."""
        return InboxKey(channel=str(self.envelope.channel), message_id=self.envelope.message_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnReply:
    """What a turn leaves for the gateway: the text to send back (None: nothing), and, for a
    turn cut short by the daemon stopping, ``interrupted`` (``"shutdown"``), which the inbox
    entry records as its error instead of marking it done."""

    text: str | None
    interrupted: str = ""


TurnRunner = Callable[[TurnRequest, "SessionControl"], Awaitable[TurnReply]]
"""Runs one turn and returns its :class:`TurnReply`.

The runner marks the request's inbox entry (:attr:`TurnRequest.inbox`) ``processing`` in
the same transaction as the turn's first record (:func:`bot.agent.loop.run_turn` does it
with the user message): an entry still ``received`` after a crash left no trace and is run
again by :meth:`Gateway.recover`; a ``processing`` one was cut off and its sender is told.
The gateway marks the entry ``done`` after sending the reply, or ``failed`` (with the
interruption's reason as its error)."""


@dataclass(slots=True)
class SessionControl:
    """Per-session handle a running turn exposes to ``/stop``."""

    cancel_callbacks: list[Callable[[str], None]] = field(default_factory=list)

    def on_cancel(self, callback: Callable[[str], None]) -> None:
        self.cancel_callbacks.append(callback)

    def cancel(self, reason: str) -> bool:
        if not self.cancel_callbacks:
            return False
        for callback in self.cancel_callbacks:
            callback(reason)
        return True


@dataclass(slots=True)
class _Session:
    queue: asyncio.Queue[TurnRequest]
    control: SessionControl | None = None
    worker_running: bool = False


def _is_transient(exc: StorageError | sqlite3.Error) -> bool:
    """Whether a database error is the database being busy or locked by another writer right
    now, which passes."""
    return exc.busy if isinstance(exc, StorageError) else busy_error(exc)


def session_key_for(envelope: IngressEnvelope, *, per_user_in_groups: bool = False) -> str:
    key = f"{envelope.channel}:{envelope.conversation_id}"
    if envelope.thread_id:
        key += f":{envelope.thread_id}"
    if per_user_in_groups and envelope.is_group:
        key += f":u{envelope.sender.id}"
    return key


class Gateway:
    """Implements :class:`bot.channel.ChannelHost` for every adapter."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        access: AccessCheck,
        clicks: ClickSink,
        run_turn: TurnRunner,
        channel_for: Callable[[ChannelRef], Channel | None],
    ) -> None:
        self._settings = settings
        self._store = store
        self._access = access
        self._clicks = clicks
        self._run_turn = run_turn
        self._channel_for = channel_for
        self._sessions: dict[str, _Session] = {}
        self._slots = asyncio.Semaphore(settings.agent.max_concurrent_turns)
        self._group: asyncio.TaskGroup | None = None
        self._accepting = True
        self._active = 0
        self._idle = asyncio.Event()
        # envelope ids queued or running in this process: recovery must not queue them again
        self._live: set[str] = set()
        self._idle.set()

    def update_settings(self, settings: Settings) -> None:
        """Swap in a reloaded configuration (allow-lists and policies are read per message)."""
        self._settings = settings

    # -- ChannelHost -----------------------------------------------------------------

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """Admit one inbound message; returns once it is queued (or refused)."""
        bound = bind_contextvars(envelope_id=envelope.envelope_id, channel=str(envelope.channel))
        try:
            for attempt in range(1, ADMIT_ATTEMPTS + 1):
                try:
                    await self._admit(envelope)
                    return
                except (StorageError, sqlite3.Error) as exc:
                    # Busy (another writer holds the database): try again a little later.
                    # Anything else fails the same way again. Either way the sender is told
                    # instead of the message being dropped without a word.
                    transient = _is_transient(exc)
                    if transient and attempt < ADMIT_ATTEMPTS:
                        log.warning("envelope_storage_retry", attempt=attempt, error=str(exc))
                        await asyncio.sleep(0.5 * attempt)
                        continue
                    log.error("envelope_failed", error=str(exc), transient=transient)
                    await self._send(envelope, FAILURE_MESSAGE)
                    return
                except Exception:
                    # Boundary: one bad envelope never takes the adapter down.
                    log.exception("envelope_failed")
                    return
        finally:
            reset_contextvars(**bound)

    async def approval_clicked(self, click: ApprovalClick) -> ClickVerdict:
        return await self._clicks.click(click)

    async def approval_refusal(
        self,
        *,
        channel: ChannelRef,
        approval_id: str,
        user_id: str,
        user_roles: tuple[str, ...] = (),
    ) -> ClickVerdict | None:
        return await self._clicks.refusal(
            channel=channel, approval_id=approval_id, user_id=user_id, user_roles=user_roles
        )

    async def approval_card(self, *, channel: ChannelRef, approval_id: str) -> ApprovalCard | None:
        return await self._clicks.card(channel=channel, approval_id=approval_id)

    # -- admission --------------------------------------------------------------------

    async def _admit(self, envelope: IngressEnvelope) -> None:
        if not self._accepting:
            log.info("envelope_refused_shutting_down")
            return
        decision = await self._access.check(envelope)
        if not decision.allowed:
            log.info("envelope_refused", reason=decision.reason)
            if decision.reply:
                await self._send(envelope, decision.reply)
            return
        channel_cfg = self._settings.channels.get(envelope.channel.kind, envelope.channel.alias)
        per_user = channel_cfg.session_per_user_in_groups if channel_cfg else False
        session_key = session_key_for(envelope, per_user_in_groups=per_user)
        command = envelope.text.strip().split(maxsplit=1)[0].lower() if envelope.text else ""
        if command in ("/stop", "/new"):
            await self._command(command, envelope, session_key)
            return
        admitted = await self._store.inbox.admit(
            channel=str(envelope.channel),
            message_id=envelope.message_id,
            envelope_id=envelope.envelope_id,
            session_key=session_key,
            payload=envelope_to_json(envelope),
        )
        if not admitted:
            log.info("envelope_duplicate", message_id=envelope.message_id)
            return
        request = TurnRequest(envelope=envelope, session_key=session_key, turn_id=uuid.uuid4().hex)
        self._enqueue(request)

    def _enqueue(self, request: TurnRequest) -> None:
        self._live.add(request.envelope.envelope_id)
        session = self._sessions.get(request.session_key)
        if session is None:
            session = _Session(queue=asyncio.Queue())
            self._sessions[request.session_key] = session
        session.queue.put_nowait(request)
        log.info("envelope_queued", session=request.session_key, depth=session.queue.qsize())
        if not session.worker_running:
            session.worker_running = True
            self._spawn(self._session_worker(request.session_key, session))

    async def recover(self) -> tuple[int, int]:
        """After a restart: re-queue messages that never started, and tell the senders of
        messages whose turn was interrupted to ask again. Returns (requeued, interrupted)."""
        requeued = interrupted = 0
        for entry in await self._store.inbox.unfinished():
            if not entry.payload or entry.envelope_id in self._live:
                continue
            envelope = envelope_from_json(entry.payload)
            if entry.status is InboxStatus.RECEIVED:
                self._enqueue(
                    TurnRequest(
                        envelope=envelope,
                        session_key=entry.session_key,
                        turn_id=uuid.uuid4().hex,
                    )
                )
                requeued += 1
            else:
                await self._store.inbox.mark(
                    channel=entry.channel,
                    message_id=entry.message_id,
                    status=InboxStatus.FAILED,
                    error="interrupted by restart",
                )
                await self._send(envelope, SHUTDOWN_MESSAGE)
                interrupted += 1
        if requeued or interrupted:
            log.info("inbox_recovered", requeued=requeued, interrupted=interrupted)
        return requeued, interrupted

    async def _command(self, command: str, envelope: IngressEnvelope, session_key: str) -> None:
        session = self._sessions.get(session_key)
        if command == "/stop":
            stopped = bool(session and session.control and session.control.cancel("/stop"))
            dropped = 0
            if session:
                while not session.queue.empty():
                    request = session.queue.get_nowait()
                    self._live.discard(request.envelope.envelope_id)
                    dropped += 1
                    await self._store.inbox.mark(
                        channel=str(request.envelope.channel),
                        message_id=request.envelope.message_id,
                        status=InboxStatus.FAILED,
                        error="cancelled by /stop",
                    )
            log.info("session_stop", session=session_key, stopped=stopped, dropped=dropped)
            if not stopped and not dropped:
                await self._send(envelope, "Nothing is running.")
            return
        await self._store.history.reset(session_key)
        log.info("session_new", session=session_key)
        await self._send(envelope, "🆕 New session started; earlier messages are forgotten.")

    # -- execution --------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        if self._group is None:
            coro.close()
            raise RuntimeError("Gateway.run() is not running")
        self._group.create_task(coro)

    async def _session_worker(self, session_key: str, session: _Session) -> None:
        try:
            while not session.queue.empty():
                request = session.queue.get_nowait()
                async with self._slots:
                    try:
                        await self._process(request, session)
                    except Exception:
                        # Boundary: the turn's bookkeeping failed (e.g. the database stayed
                        # locked); the other sessions and the gateway itself carry on.
                        log.exception("turn_bookkeeping_failed", session=session_key)
        finally:
            session.worker_running = False
            if session.queue.empty() and self._sessions.get(session_key) is session:
                del self._sessions[session_key]

    async def _process(self, request: TurnRequest, session: _Session) -> None:
        envelope = request.envelope
        channel_name = str(envelope.channel)
        control = SessionControl()
        session.control = control
        self._active += 1
        self._idle.clear()
        bound = bind_contextvars(
            envelope_id=envelope.envelope_id,
            channel=channel_name,
            session=request.session_key,
            turn_id=request.turn_id,
        )
        try:
            # the runner marks the entry "processing" with its first record (TurnRunner)
            try:
                reply = await self._run_turn(request, control)
            except Exception as exc:
                # Boundary: a failing turn is logged and reported, never fatal.
                log.exception("turn_failed")
                # tell the sender first: marking the row may fail for the same reason
                await self._send(envelope, FAILURE_MESSAGE)
                await self._store.inbox.mark(
                    channel=channel_name,
                    message_id=envelope.message_id,
                    status=InboxStatus.FAILED,
                    error=type(exc).__name__,
                )
                return
            if reply.text:
                await self._send(envelope, reply.text)
            if reply.interrupted:
                log.info("turn_interrupted", reason=reply.interrupted)
                await self._store.inbox.mark(
                    channel=channel_name,
                    message_id=envelope.message_id,
                    status=InboxStatus.FAILED,
                    error=reply.interrupted,
                )
                return
            await self._store.inbox.mark(
                channel=channel_name,
                message_id=envelope.message_id,
                status=InboxStatus.DONE,
            )
        finally:
            reset_contextvars(**bound)
            session.control = None
            self._live.discard(envelope.envelope_id)
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def _send(self, envelope: IngressEnvelope, text: str) -> None:
        """Send to the envelope's reply target: nothing at all for a silent scheduled job
        (``announce`` false), and through the reply target's channel, since a scheduled job
        may announce to another channel."""
        if not envelope.announce:
            return
        target_channel = envelope.reply_target.channel
        channel = self._channel_for(target_channel)
        if channel is None:
            log.warning("reply_dropped_no_channel", channel=str(target_channel))
            return
        try:
            await channel.send(envelope.reply_target, text)
        except Exception:
            # Boundary: a platform failure on send is logged; the turn's history is kept.
            log.exception("reply_send_failed")

    # -- lifecycle --------------------------------------------------------------------

    async def run(self) -> None:
        """Own the session workers; lives until cancelled."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                await asyncio.Event().wait()
            finally:
                self._group = None

    @property
    def active_turns(self) -> int:
        return self._active

    def queue_depth(self) -> int:
        return sum(s.queue.qsize() for s in self._sessions.values())

    async def drain(self, timeout_s: float) -> bool:
        """Stop accepting; wait up to ``timeout_s`` for running turns, then cancel them.

        Returns True when every turn finished on its own."""
        self._accepting = False
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
            return True
        except TimeoutError:
            for session in self._sessions.values():
                if session.control:
                    session.control.cancel(SHUTDOWN)
            try:
                async with asyncio.timeout(10):
                    await self._idle.wait()
            except TimeoutError:
                log.warning("drain_incomplete", active=self._active)
            return False
