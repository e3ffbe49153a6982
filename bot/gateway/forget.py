"""Admission step: ``/forget``, a member asking the bot to forget them on this channel.

An approver decides first. The request goes through the approval service exactly as a tool
call that needs approval does (:meth:`bot.approval.gate.ApprovalGate.ask`, tool
:data:`FORGET_TOOL`): an approval card where the channel has approvers (the requester cannot
approve their own request unless ``approval.self_approval`` says so), the terminal prompt in
the console, and the runtime's refusal where no approver can be reached. The decision is
audited like any other. Grants are never consulted: every ``/forget`` asks.

While the approver is asked, the request waits in a task of its own (owned by
:meth:`ForgetCommand.run`), never in admission: the sender's other messages go on being
answered. Once approved, :meth:`bot.store.forget.Forgetting.user` deletes the sender's
records on the channel (the audit trail keeps its rows, their id replaced by a tombstone),
the workspace folders of their direct conversations go too, and the sender is told what was
removed. The command reaches the gateway before the inbox, so a platform's redelivery of the
command would ask again; a second run finds nothing more to delete.

A person has at most one request waiting per channel: a second ``/forget`` while the first
waits asks nobody and is answered :data:`ALREADY_WAITING`, at most once per
:data:`ALREADY_WAITING_INTERVAL_S`, silence otherwise. This process knows its own requests;
one another replica asked is found by its pending approval card in the database (pending
rows of a replica gone are expired, so none lingers). Like every member command,
``/forget`` is counted by the rate limits before it comes here
(:mod:`bot.gateway.command_limits`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Coroutine

import structlog
from structlog.contextvars import bind_contextvars

from bot.approval.gate import ApprovalDecision, ApprovalGate, ApprovalRequest
from bot.chat_commands import command_of
from bot.config import Settings
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import Replies
from bot.store import ForgetReport, Store
from bot.store.approvals import ApprovalStatus
from bot.store.audit import Decision
from bot.tools.builtin.scope_removal import remove_conversation_folders
from bot.tools.builtin.workspace import workspace_root
from bot.turn import TurnIdentity

log = structlog.get_logger(__name__)

FORGET_TOOL = "forget"
ASKING = (
    "I'll ask an approver to confirm. Once one does, I'll delete what you left on this channel: "
    "your messages and my answers to them, your notes, files and usage details. The audit "
    "trail keeps its rows, with your id replaced."
)
ALREADY_WAITING = (
    "Your earlier /forget is already waiting for an approver; I'll tell you once one decides."
)
#: A person is told their request is already waiting at most this often.
ALREADY_WAITING_INTERVAL_S = 60.0
#: People remembered as told (beyond, those told longer ago than the interval are dropped).
TOLD_HELD = 10_000
UNAVAILABLE = "Forgetting can't be approved here; please ask an operator (hatchway forget)."
NOT_DONE = "Nothing was deleted: {why}."
WHAT_IS_DELETED = (
    "Deletes everything this person left on this channel: their messages and the answers "
    "to them, notes, files, scheduled jobs and usage details; audit rows stay, with the id "
    "replaced by a tombstone."
)

#: Each table as the summary names one of its rows, and several.
_NAMES = {
    "messages": ("history message", "history messages"),
    "inbox": ("received message", "received messages"),
    "tool_calls": ("tool call", "tool calls"),
    "memory": ("note", "notes"),
    "attachments": ("file", "files"),
    "schedules": ("scheduled job", "scheduled jobs"),
    "usage": ("usage record", "usage records"),
    "approvals": ("approval request", "approval requests"),
    "context_lines": ("message kept for context", "messages kept for context"),
}


def _counted(count: int, one: str, several: str) -> str:
    return f"{count} {one if count == 1 else several}"


Settings_ = Callable[[], Settings]
Requester = tuple[str, str]
"""A person asking: their channel (``kind.alias``) and user id."""


def _why(decision: ApprovalDecision) -> str:
    if decision.verdict in (Decision.DENIED, Decision.EDITED):
        return "an approver declined"
    if decision.verdict is Decision.EXPIRED:
        return "no approver answered in time"
    reason = decision.runtime_reason.value if decision.runtime_reason else "no approver"
    return f"no approver could be asked ({reason}); an operator can run hatchway forget"


def summary(report: ForgetReport, workspace_files: int) -> str:
    """What one run removed, in a sentence for the person forgotten."""
    parts = [_counted(n, *_NAMES[t]) for t, n in report.removed.items() if n and t in _NAMES]
    if workspace_files:
        parts.append(_counted(workspace_files, "workspace file", "workspace files"))
    removed = ", ".join(parts) if parts else "nothing was left"
    kept = sum(report.tombstoned.values())
    text = f"Done: I forgot you on this channel. Removed: {removed}."
    if kept:
        records = _counted(
            kept, "audit or approval record stays", "audit and approval records stay"
        )
        text += f" {records} with your id replaced."
    if report.in_flight:
        waiting = _counted(report.in_flight, "message", "messages")
        text += f" {waiting} still being answered were left."
    return text


class ForgetCommand:
    """The ``/forget`` admission step, after the access policy (see the module docstring)."""

    #: what this step acts on; any other message passes it by (admission.compose)
    commands = frozenset({FORGET_TOOL})

    def __init__(
        self,
        *,
        approvals: ApprovalGate | None,
        store: Store,
        replies: Replies,
        settings: Settings_,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._approvals = approvals
        self._store = store
        self._replies = replies
        self._settings = settings
        self._clock = clock
        self._group: asyncio.TaskGroup | None = None
        #: (channel, sender) of each request waiting here
        self._waiting: set[Requester] = set()
        #: when each person was last told that their request is waiting (bounded)
        self._told: dict[Requester, float] = {}

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        if command_of(arrival.envelope.text) != FORGET_TOOL:
            await call_next(arrival)
            return
        envelope = arrival.envelope
        if self._approvals is None or self._group is None:
            log.info("forget_requested", conversation_id=envelope.conversation_id)
            await self._replies.send(envelope, UNAVAILABLE)
            return
        requester = (str(envelope.channel), envelope.sender.id)
        if requester in self._waiting:
            await self._already_waiting(envelope, requester)
            return
        self._waiting.add(requester)  # before the read below: admissions run side by side
        if await self._card_waiting(requester):  # asked on another replica
            self._waiting.discard(requester)
            await self._already_waiting(envelope, requester)
            return
        log.info("forget_requested", conversation_id=envelope.conversation_id)
        await self._replies.send(envelope, ASKING)
        self._spawn(self._forget(arrival, self._approvals), requester)

    async def _card_waiting(self, requester: Requester) -> bool:
        """Whether an approval card of a ``/forget`` of ``requester`` is pending in the
        database (asked by another replica: this process's own are in ``_waiting``)."""
        channel, sender = requester
        pending = await self._store.approvals.list(status=ApprovalStatus.PENDING)
        return any(
            r.tool == FORGET_TOOL and r.channel == channel and r.requester == sender
            for r in pending
        )

    async def _already_waiting(self, envelope: IngressEnvelope, requester: Requester) -> None:
        now = self._clock()
        last = self._told.get(requester)
        told = last is None or now - last >= ALREADY_WAITING_INTERVAL_S
        log.info("forget_already_waiting", conversation_id=envelope.conversation_id, told=told)
        if not told:
            return
        if len(self._told) >= TOLD_HELD:  # bound what a crowd of requesters can make us hold
            cutoff = now - ALREADY_WAITING_INTERVAL_S
            self._told = {k: t for k, t in self._told.items() if t > cutoff}
        self._told[requester] = now
        await self._replies.send(envelope, ALREADY_WAITING)

    def _spawn(self, coro: Coroutine[object, object, None], requester: Requester) -> None:
        if self._group is None:  # stopped meanwhile
            coro.close()
            self._waiting.discard(requester)
            return
        self._group.create_task(self._one_waiting(coro, requester))

    async def _one_waiting(
        self, request: Coroutine[object, object, None], requester: Requester
    ) -> None:
        try:
            await request
        finally:
            self._waiting.discard(requester)

    async def run(self) -> None:
        """Own the requests waiting for an approver; lives until cancelled (a shutdown
        expires their approvals first, so they end on their own)."""
        async with asyncio.TaskGroup() as group:
            self._group = group
            try:
                await asyncio.Event().wait()
            finally:
                self._group = None

    async def _forget(self, arrival: Arrival, approvals: ApprovalGate) -> None:
        envelope = arrival.envelope
        channel = str(envelope.channel)
        turn = TurnIdentity(
            turn_id=uuid.uuid4().hex, session_key=arrival.session_key, envelope=envelope
        )
        # this task is the request's own (a copy of its admission's context): no reset
        bind_contextvars(turn_id=turn.turn_id, session=arrival.session_key)
        request = ApprovalRequest(
            tool=FORGET_TOOL,
            arguments={"user": envelope.sender.id, "channel": channel},
            call_id=f"forget-{turn.turn_id[:12]}",
            turn=turn,
            requires_approval=True,
            notes=(WHAT_IS_DELETED,),
        )
        try:
            decision = await approvals.ask(request)
            if not decision.allowed:
                log.info("forget_refused", verdict=decision.verdict)
                await self._replies.send(envelope, NOT_DONE.format(why=_why(decision)))
                return
            report = await self._store.forget.user(envelope.sender.id, channel=channel)
            settings = self._settings()
            files = await remove_conversation_folders(
                workspace_root(settings),
                settings.tools.workspace.scope,
                report.direct_conversations,
            )
            log.info(
                "user_forgotten",
                channel=channel,
                tombstone=report.tombstone,
                removed=report.removed,
                tombstoned=report.tombstoned,
                workspace_files=files,
            )
            await self._replies.send(envelope, summary(report, files))
        except Exception:
            # Boundary: a failed request is logged and told; the gateway carries on.
            log.exception("forget_failed")
            await self._replies.send(envelope, NOT_DONE.format(why="something went wrong"))
