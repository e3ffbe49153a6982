"""The gateway: from an inbound envelope to a turn, exactly once per platform message.

As a message arrives it is routed to its agent (:mod:`bot.routing`: the envelope's
``agent`` and ``route``) and its session key is derived
(``kind.alias:conversation[:thread]``, per user in groups when the channel says so, with
the agent's name when it is not ``default``: a conversation's history belongs to its
agent). Then admission runs these steps, in this order,
composed in :meth:`Gateway.__init__` and nowhere else:

1. storage retry (:mod:`~bot.gateway.retry`) — a busy database runs the steps below again;
   a sender whose message cannot be admitted is told;
2. drain (:mod:`~bot.gateway.drain`) — once shutdown began, nothing new is taken (where
   several replicas share the database, a message is still admitted, and its turn left to
   whichever replica owns its session next: :mod:`~bot.gateway.handover`);
3. the chat commands open to anyone (:mod:`~bot.gateway.commands`): ``/id`` and ``/help``,
   answered to strangers too, so that they can learn the ids an admin needs, as often as
   the command limits let them (step 5: one answer every few seconds, a member's counted by
   the buckets);
4. group context (:mod:`~bot.gateway.group_context`): where the alias keeps it, a group
   message not addressed to the bot is kept for context only and goes no further; then
   access policy (:mod:`~bot.gateway.access`: allow-lists, DM/group policy, mention gating,
   pairing) — a refused message gets no LLM call, at most one polite line;
5. the command limits (:mod:`~bot.gateway.command_limits`): every chat command a member
   sends takes a token from the same buckets as messages (step 10), except ``/stop``, which
   always passes (its answers have an allowance of their own); a refused command is not
   run. Every command's handler comes after this step;
6. the members' chat commands: ``/stop`` cancels the session's running turn (or, from a
   Slack slash command, what the sender started in the conversation), ``/new`` starts a new
   session; ``/usage`` answers its sender privately with their usage and budgets, and
   ``/status`` says what serves the conversation (:mod:`~bot.gateway.status_commands`);
7. ``/forget`` (:mod:`~bot.gateway.forget`): asks an approver, then forgets the sender on
   this channel, in a task of its own (one waiting per person);
8. dedupe against the persisted inbox (:mod:`~bot.gateway.dedupe`) — a platform
   redelivery is a no-op;
9. the sender's display name kept for the web console (:mod:`~bot.gateway.names`: no
   database trip unless the name is new, changed or a day old);
10. rate limits (:mod:`~bot.gateway.ratelimit`): a token bucket per sender and per
   conversation; a refused message's inbox entry is marked, its sender told once a minute;

and the endpoint queues the message as a turn (:mod:`~bot.gateway.sessions`: one turn at a
time per session, a global cap on concurrent turns), with a new
:class:`~bot.turn.TurnIdentity`; where several replicas share the database, through the
session's owner (:mod:`~bot.gateway.handover`). The turn itself runs in the
:data:`~bot.turn.TurnRunner` the gateway is given (:mod:`bot.agent.runner`).
Approval clicks never pass through here: adapters send them straight to the approval
service (:class:`bot.channel_host.AdapterHost`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import structlog
from structlog.contextvars import bind_contextvars, reset_contextvars

from bot import telemetry
from bot.approval.gate import ApprovalGate
from bot.config import ChannelCommon, Settings
from bot.context import ConversationContext
from bot.envelope import ChannelRef, IngressEnvelope, envelope_to_json
from bot.errors import StorageUnavailable
from bot.gateway.access import AccessCheck, AccessStep
from bot.gateway.admission import Admit, Arrival, compose
from bot.gateway.command_limits import CommandLimits
from bot.gateway.commands import MemberCommands, OpenCommands
from bot.gateway.dedupe import InboxDedupe
from bot.gateway.drain import Drain
from bot.gateway.forget import ForgetCommand
from bot.gateway.grant_commands import GrantCommands
from bot.gateway.group_context import GroupContextStep
from bot.gateway.ledger import ReplyLedger
from bot.gateway.log_fields import LogFields
from bot.gateway.names import DisplayNameBook
from bot.gateway.ratelimit import RateLimits
from bot.gateway.recovery import CutOffBy, recover
from bot.gateway.retry import StorageRetry
from bot.gateway.sending import ChannelLookup, Replies
from bot.gateway.sessions import Sessions, session_key_for
from bot.gateway.status_commands import StatusCommands
from bot.gateway.why_command import ToolCatalog, WhyCommand
from bot.routing import Router
from bot.store import InboxKey, InboxStatus, Store
from bot.store.inbox import InboxEntry
from bot.store.liveness import Liveness
from bot.turn import TurnIdentity, TurnRunner

if TYPE_CHECKING:
    from bot.gateway.handover import Handover

log = structlog.get_logger(__name__)

#: What every log line of a message's admission says of it
ADMISSION_FIELDS = LogFields("envelope_id", "channel")

#: The inbox error of a message deleted on its platform before its turn began.
DELETED = "deleted before its turn began"


class Gateway:
    """Takes every adapter's inbound messages (``ChannelHost.deliver``) to turns."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        access: AccessCheck,
        run_turn: TurnRunner,
        channel_for: ChannelLookup,
        approvals: ApprovalGate | None = None,
        replica: Liveness | None = None,
        context: ConversationContext | None = None,
        reply_undecided: Callable[[str], None] | None = None,
        tools: ToolCatalog | None = None,
        close_parked: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        self._settings = settings
        self._context = context or ConversationContext(store=store, settings=self._current)
        self._router = Router(settings)
        self._store = store
        self._replies = Replies(channel_for)
        self._drain = Drain()
        self._ledger = ReplyLedger(store, self._replies, undecided=reply_undecided)
        self._sessions = Sessions(
            store=store,
            run_turn=run_turn,
            ledger=self._ledger,
            drain=self._drain,
            max_concurrent_turns=settings.agent.max_concurrent_turns,
            on_interrupted=settings.agent.on_interrupted,
        )
        #: several replicas over one database: a session's turns run on its owner
        self._handover: Handover | None = None
        if replica is not None:
            from bot.gateway.handover import Handover  # PostgreSQL only

            self._handover = Handover(
                store=store, sessions=self._sessions, replica=replica, recover=self._recover
            )
            self._sessions.take_turns_with(self._handover.take)
        self._members = MemberCommands(
            sessions=self._sessions,
            store=store,
            replies=self._replies,
            elsewhere=None if self._handover is None else self._handover.forward_stop,
            close_parked=close_parked,
        )
        if self._handover is not None:
            self._handover.run_commands_with(self._members.forwarded)
        self._forget = ForgetCommand(
            approvals=approvals, store=store, replies=self._replies, settings=self._current
        )
        self._limits = RateLimits(
            config=settings.rate_limits,
            shared=replica is not None,
            store=store,
            replies=self._replies,
            channel_settings=self._channel_settings,
        )
        commands = CommandLimits(take_token=self._command_token, is_member=access.is_member)
        self._admit = compose(
            [
                StorageRetry(self._replies),
                # several replicas: a stopping one still admits, and leaves the turn to the
                # session's next owner (the handover), so nothing waits for a redelivery
                self._drain.refuse_new if self._handover is None else _admit_while_draining,
                OpenCommands(
                    replies=self._replies,
                    channel_settings=self._channel_settings,
                    admits=commands.admits_open,
                ),
                GroupContextStep(self._context),
                AccessStep(access, self._replies),
                # every member command is counted here, before any command's handler
                commands,
                self._members,
                StatusCommands(
                    store=store,
                    replies=self._replies,
                    channel_for=channel_for,
                    settings=self._current,
                ),
                WhyCommand(
                    store=store,
                    replies=self._replies,
                    channel_for=channel_for,
                    settings=self._current,
                    tools=tools or (lambda: ()),
                ),
                GrantCommands(store=store, replies=self._replies, settings=self._current),
                self._forget,
                InboxDedupe(store, on_admitted=self._sessions.admitted),
                DisplayNameBook(store),
                self._limits,
            ],
            endpoint=self._queue,
        )

    def update_settings(self, settings: Settings) -> None:
        """Swap in a reloaded configuration (routes and session keys are derived per
        message)."""
        self._settings = settings
        self._router = Router(settings)
        self._limits.update(settings.rate_limits)

    def _current(self) -> Settings:
        return self._settings

    async def _command_token(self, envelope: IngressEnvelope) -> bool:
        return await self._limits.admits(envelope, recorded=False)

    async def deliver(self, envelope: IngressEnvelope) -> None:
        """Admit one inbound message; returns once it is queued (or refused). Raises
        :class:`~bot.errors.StorageUnavailable` when the database server cannot be reached
        (PostgreSQL): the adapter then leaves the platform's event unconfirmed, to come
        again here or on another replica."""
        bound = ADMISSION_FIELDS.bind(envelope.envelope_id, str(envelope.channel))
        try:
            with telemetry.admission(envelope):
                await self._admit(self._arrival(envelope))
        except StorageUnavailable:
            raise
        except Exception:
            # Boundary: one bad envelope never takes the adapter down.
            log.exception("envelope_failed")
        finally:
            ADMISSION_FIELDS.reset(bound)

    async def edited(self, envelope: IngressEnvelope) -> None:
        """A message was edited (``ChannelHost.edited``): the text of a message still queued
        is replaced, in the queue and in its inbox entry; a message never admitted is
        admitted as it reads now; one whose turn was taken is left alone. A message kept for
        context gets its new text (and is admitted if the edit addresses the bot)."""
        key = InboxKey(channel=str(envelope.channel), message_id=envelope.message_id)
        bound = bind_contextvars(channel=key.channel, message_id=key.message_id)
        try:
            if await self._context.edited(envelope):
                log.info("edit_applied", context=True)
                return
            envelope = self._router.routed(envelope)
            if self._sessions.is_taken(key):
                log.info("edit_ignored", reason="turn started")
                return
            queued = self._sessions.replace_queued(key, envelope)
            if await self._store.inbox.replace_payload(key, envelope_to_json(envelope)):
                if not queued and not self._sessions.is_taken(key):
                    # admitted, its admission's later steps still to queue it (or left by
                    # the process before: recovery reads the payload)
                    self._sessions.edit_when_queued(key, envelope)
                log.info("edit_applied", queued=queued)
                return
            entry = await self._store.inbox.get(key)
            if entry is None:
                log.info("edit_admitted")
                await self.deliver(envelope)
            elif entry.status is not InboxStatus.RECEIVED:
                log.info("edit_ignored", reason=f"turn {entry.status.value}")
                return
            # Admitted meanwhile: by the edit itself, or by the original whose inbox write was
            # in flight as the edit came (the edit's own admission is then dropped as a
            # redelivery). The original may not be queued yet: the answer to its inbox write
            # reaches it a loop step after the answer to the read above, and later admission
            # steps may await; then the edit waits for it in Sessions.
            if not self._sessions.is_taken(key):
                if not self._sessions.replace_queued(key, envelope):
                    self._sessions.edit_when_queued(key, envelope)
                await self._store.inbox.replace_payload(key, envelope_to_json(envelope))
        except Exception:
            # Boundary: one bad edit never takes the adapter down.
            log.exception("edit_failed")
        finally:
            reset_contextvars(**bound)

    async def deleted(self, channel: ChannelRef, message_id: str) -> None:
        """A message was deleted (``ChannelHost.deleted``): its turn is skipped when it has
        not begun, and a line kept of it for context goes."""
        key = InboxKey(channel=str(channel), message_id=message_id)
        bound = bind_contextvars(channel=key.channel, message_id=message_id)
        try:
            await self._context.dropped(channel, message_id)
            if self._sessions.is_taken(key):
                log.info("delete_ignored", reason="turn started")
                return
            dropped = self._sessions.drop_queued(key)
            if await self._store.inbox.skip(key, DELETED):
                log.info("deleted_message_skipped", queued=dropped is not None)
            elif dropped is not None:  # queued in memory, its row no longer "received"
                log.warning("deleted_message_skipped", queued=True, row="not received")
        except Exception:
            # Boundary: one bad deletion never takes the adapter down.
            log.exception("delete_failed")
        finally:
            reset_contextvars(**bound)

    def _channel_settings(self, envelope: IngressEnvelope) -> ChannelCommon | None:
        return self._settings.channels.get(envelope.channel.kind, envelope.channel.alias)

    def _arrival(self, envelope: IngressEnvelope) -> Arrival:
        envelope = self._router.routed(envelope)
        channel_cfg = self._channel_settings(envelope)
        per_user = channel_cfg.session_per_user_in_groups if channel_cfg else False
        return Arrival(
            envelope=envelope,
            session_key=session_key_for(envelope, per_user_in_groups=per_user),
        )

    async def _queue(self, arrival: Arrival) -> None:
        turn_id = uuid.uuid4().hex
        turn = TurnIdentity(
            turn_id=turn_id,
            session_key=arrival.session_key,
            envelope=arrival.envelope,
            trace=telemetry.admitted(turn_id),
        )
        if self._handover is None:
            self._sessions.enqueue(turn)
        else:
            await self._handover.admitted(turn)

    def resume(self, turn: TurnIdentity) -> None:
        """Queue the resumption of a parked turn (:mod:`bot.gateway.resumption`) into its
        session's queue, like a message."""
        self._sessions.enqueue(turn)

    async def owns(self, session_key: str) -> bool:
        """Whether this process runs ``session_key``'s turns now: always for one process;
        with several replicas, whether it owns the session, taking it first when nobody
        does or its owner is gone (:meth:`~bot.gateway.handover.Handover.own`)."""
        return self._handover is None or await self._handover.own(session_key)

    async def recover(self, now: float | None = None) -> tuple[int, int]:
        """After a restart: re-queue messages that never started, tell the senders of
        messages whose turn was interrupted to ask again, and re-run cut-off scheduled runs
        once (:mod:`~bot.gateway.recovery`). Returns (requeued, interrupted). Where several
        replicas share the database, only what gone replicas left is recovered, session by
        session (a sweep of :mod:`~bot.gateway.handover`; it returns (0, 0))."""
        if self._handover is not None:
            await self._handover.sweep()
            self._sessions.recovered()
            self._ledger.open_checks()
            return 0, 0
        return await recover(
            store=self._store,
            sessions=self._sessions,
            ledger=self._ledger,
            schedules=self._settings.schedules,
            on_interrupted=self._settings.agent.on_interrupted,
            now=now,
        )

    async def _recover(self, entries: Sequence[InboxEntry], cause: CutOffBy) -> None:
        """Recovery's rules for the entries a gone replica left (a takeover), or those this
        replica's own turns left when the database went away under them."""
        await recover(
            store=self._store,
            sessions=self._sessions,
            ledger=self._ledger,
            schedules=self._settings.schedules,
            on_interrupted=self._settings.agent.on_interrupted,
            entries=entries,
            cause=cause,
        )

    async def run(self) -> None:
        """Own the session workers, the rate limits' writer, the ``/forget`` requests
        waiting for an approver and, with several replicas, the handover's listening and
        sweeps; lives until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._sessions.run())
            group.create_task(self._limits.run())
            group.create_task(self._forget.run())
            if self._handover is not None:
                group.create_task(self._handover.run())

    @property
    def rate_limited(self) -> int:
        """Messages the rate limits refused since the start."""
        return self._limits.refused

    async def flush_rate_limits(self) -> None:
        """Merge the rate limits' buckets with the database now (as every second and at
        the drain): what this process took goes in, what other replicas took comes back."""
        await self._limits.flush()

    @property
    def handover(self) -> Handover | None:
        """Who runs each session's turns, with several replicas (None: one process)."""
        return self._handover

    @property
    def active_turns(self) -> int:
        return self._drain.active_turns

    @property
    def draining(self) -> bool:
        """Shutdown began (:meth:`drain`)."""
        return self._drain.draining

    def queue_depth(self) -> int:
        return self._sessions.queue_depth()

    @property
    def idle(self) -> bool:
        """No turn is queued or running."""
        return self._sessions.idle

    async def wait_idle(self) -> None:
        """Return once no turn is queued or running: every message admitted so far has been
        answered or has failed (``hatchway chat`` waits for this at the end of its input)."""
        await self._sessions.wait_idle()

    async def drain(self, timeout_s: float) -> bool:
        """Stop accepting; wait up to ``timeout_s`` for running turns, then cancel them.

        Returns True when every turn finished on its own. The rate limits' buckets are
        written last, so that the next start goes on counting from them."""
        if self._handover is not None:
            self._handover.drain()
        drained = await self._drain.drain(timeout_s, self._sessions.cancel_running)
        await self._limits.flush()
        return drained


def _admit_while_draining(arrival: Arrival, call_next: Admit) -> Awaitable[None]:
    """The drain step with several replicas: a message is admitted while this replica stops
    (the handover runs no new turn here: the session's next owner does)."""
    return call_next(arrival)
