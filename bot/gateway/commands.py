"""Admission steps: the chat commands, answered by the gateway and never by the model.

A small router over :data:`bot.chat_commands.CHAT_COMMANDS`: the message's first word
(``/name``, case-insensitive; adapters have already removed the platform's own addressing,
such as Telegram's ``@botname``) picks one handler; any other message passes on. Each
command's access rule decides where it is answered:

- ``anyone`` (``/id``, ``/help``) — :class:`OpenCommands`, before the access policy: a
  stranger needs ``/id`` to be added. It still needs the message to reach the bot (a direct
  message, or addressed to it in a group), and nothing is answered where the channel's DM or
  group policy is ``disabled`` or to another bot. How often is the command limits' to say
  (one answer per sender every few seconds, and a member's takes a rate-limit token).
- ``member`` (``/new``, ``/stop``) — :class:`MemberCommands`, after it and after the command
  limits (:mod:`bot.gateway.command_limits`), which count every member command before any
  handler runs; a ``/stop`` past its sender's allowance of answers comes ``quiet`` and is
  done without one.

``/stop`` cancels the session's running turn and drops the turns queued behind it (their
inbox entries become ``failed``, "cancelled by /stop"); with the envelope's ``command_scope``
``conversation`` (a Slack slash command, which names no thread) it stops what the sender
started anywhere in the conversation and says which. ``/new`` starts a new generation of the
session's history. ``/pair CODE`` is not among them: it belongs to the access policy
(:mod:`bot.gateway.access`). Where several replicas share the database, a session's turns run
on the replica that owns it (:mod:`bot.gateway.handover`): a ``/stop`` that finds nothing of
its session here goes to the owner, which answers it; one of a whole conversation goes to
every replica that owns a session of it as well, and each says what it stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import structlog

from bot.chat_commands import CHAT_COMMANDS, CommandAccess, command_of, command_spec
from bot.config import ChannelCommon
from bot.envelope import IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.sending import Replies
from bot.gateway.sessions import Sessions
from bot.store import InboxStatus, Store
from bot.turn import CancelReason, TurnIdentity

log = structlog.get_logger(__name__)

NOTHING_RUNNING = "Nothing is running."
STILL_STOPPING = "⏹ Already stopping: the turn is finishing what it was doing."
NOTHING_OF_YOURS = "Nothing you started is running here."
NEW_SESSION = "🆕 New session started; earlier messages are forgotten."
#: The answer of a ``/stop`` that found nothing running but a parked turn, whose card it
#: closed (docs/approvals.md, "Parking and resumption").
PARKED_CANCELLED = "⏹ Stopped: the request waiting for approval was cancelled."

CommandHandler = Callable[[Arrival], Awaitable[None]]
StopElsewhere = Callable[[Arrival, bool], Awaitable[bool]]
"""Hands a ``/stop`` to the other replicas that own the sessions it acts on (the flag: this
replica stopped nothing, so one of them answers even when it stops nothing either); whether
any will answer it."""
ChannelSettings = Callable[[IngressEnvelope], ChannelCommon | None]
"""The settings of the alias an envelope came in on (None: not configured)."""
OpenLimit = Callable[[IngressEnvelope], Awaitable[bool]]
"""Whether a command open to anyone is answered now (the abuse limits decide:
:meth:`bot.gateway.command_limits.CommandLimits.admits_open`)."""


def _spec_access(name: str) -> CommandAccess | None:
    spec = command_spec(name)
    return spec.access if spec is not None else None


def reaches_bot(envelope: IngressEnvelope, cfg: ChannelCommon | None) -> bool:
    """Whether a command open to anyone is answered: the message reaches the bot (a DM, or
    addressed to it in a group) where the channel takes such messages at all."""
    if cfg is None or (envelope.sender.is_bot and cfg.ignore_other_bots):
        return False
    if envelope.is_direct:
        return cfg.dm_policy != "disabled"
    return cfg.group_policy != "disabled" and envelope.addressed_to_bot


def help_text(envelope: IngressEnvelope) -> str:
    prefix = envelope.capabilities.command_prefix
    lines = [f"{prefix}{spec.name} — {spec.summary}" for spec in CHAT_COMMANDS]
    return "Commands:\n" + "\n".join(lines)


def id_text(envelope: IngressEnvelope) -> str:
    chat = f"This chat: {envelope.conversation_id}"
    if envelope.thread_id:
        chat += f" (thread {envelope.thread_id})"
    section = f"[channels.{envelope.channel.kind}.{envelope.channel.alias}]"
    return (
        f"Your user id: {envelope.sender.id}\n{chat}\nChannel: {envelope.channel}\n"
        f"An admin adds the user id to allowed_users or approvers, and the chat id to "
        f"allowed_conversations, under {section}."
    )


class OpenCommands:
    """Admission step before the access policy: ``/id`` and ``/help``, for anyone the
    message reaches, as often as ``admits`` lets them (the abuse limits)."""

    def __init__(
        self,
        *,
        replies: Replies,
        channel_settings: ChannelSettings,
        admits: OpenLimit,
    ) -> None:
        self._replies = replies
        self._channel_settings = channel_settings
        self._admits = admits
        self._handlers: Mapping[str, Callable[[IngressEnvelope], str]] = {
            "id": id_text,
            "help": help_text,
        }
        #: what this step answers; any other message passes it by (admission.compose)
        self.commands = frozenset(
            name for name in self._handlers if _spec_access(name) is CommandAccess.ANYONE
        )

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        envelope = arrival.envelope
        name = command_of(envelope.text)
        answer = self._handlers.get(name)
        if answer is None or _spec_access(name) is not CommandAccess.ANYONE:
            await call_next(arrival)
            return
        if not reaches_bot(envelope, self._channel_settings(envelope)):
            log.info(
                "command_ignored",
                command=name,
                conversation_id=envelope.conversation_id,
                user_id=envelope.sender.id,
            )
            return
        if not await self._admits(envelope):
            return
        log.info(
            "command_answered",
            command=name,
            conversation_id=envelope.conversation_id,
            user_id=envelope.sender.id,
        )
        await self._replies.send(envelope, answer(envelope))


class MemberCommands:
    """Admission step after the access policy: ``/stop`` and ``/new``."""

    def __init__(
        self,
        *,
        sessions: Sessions,
        store: Store,
        replies: Replies,
        elsewhere: StopElsewhere | None = None,
        close_parked: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        self._close_parked = close_parked
        self._sessions = sessions
        self._store = store
        self._replies = replies
        self._elsewhere = elsewhere
        self._handlers: Mapping[str, CommandHandler] = {"stop": self._stop, "new": self._new}
        #: what this step does; any other message passes it by (admission.compose)
        self.commands = frozenset(
            name for name in self._handlers if _spec_access(name) is CommandAccess.MEMBER
        )

    async def forwarded(self, arrival: Arrival, answer: bool) -> None:
        """A ``/stop`` another replica handed over (several replicas): done here as if it
        had come here, without handing it on again; one of a whole conversation is answered
        only when something of the sender's was stopped here, or ``answer`` asks for it, and
        "Nothing is running." only when ``answer`` asks for it (a quiet ``/stop`` does not)."""
        if command_of(arrival.envelope.text) == "stop":
            await self._stop(arrival, forwarded=True, answer=answer)

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        name = command_of(arrival.envelope.text)
        handler = self._handlers.get(name)
        if handler is None or _spec_access(name) is not CommandAccess.MEMBER:
            await call_next(arrival)
            return
        if arrival.envelope.capabilities.commands_in_order:
            # a script's /new or /stop acts where it stands: after the lines before it
            await self._sessions.wait_session_idle(arrival.session_key)
        await handler(arrival)

    async def _stop(
        self, arrival: Arrival, *, forwarded: bool = False, answer: bool = True
    ) -> None:
        envelope = arrival.envelope
        if envelope.command_scope == "conversation":
            await self._stop_senders_turns(arrival, forwarded=forwarded, answer=answer)
            return
        stopped, dropped = self._sessions.stop(arrival.session_key, CancelReason.STOP)
        await self._mark_dropped(dropped)
        closed = await self._closing_parked(arrival.session_key)
        log.info("session_stop", session=arrival.session_key, stopped=stopped, dropped=len(dropped))
        if closed and not arrival.quiet and answer:
            # said even when a turn was stopped too: that turn may be the parked one, its
            # park committed and its task not yet ended, which says nothing more
            await self._replies.send(envelope, PARKED_CANCELLED)
        if stopped or dropped or closed:
            return
        if self._sessions.winding_down(arrival.session_key):
            if not arrival.quiet and answer:
                await self._replies.send(envelope, STILL_STOPPING)
            return
        # a quiet /stop asks the session's owner to stop it without an answer, too
        wanted = not arrival.quiet and answer
        if not forwarded and self._elsewhere is not None and await self._elsewhere(arrival, wanted):
            return  # the session's owner answers
        if wanted:
            await self._replies.send(envelope, NOTHING_RUNNING)

    async def _stop_senders_turns(
        self, arrival: Arrival, *, forwarded: bool = False, answer: bool = True
    ) -> None:
        envelope = arrival.envelope
        prefix = f"{envelope.channel}:{envelope.conversation_id}"
        stopped, dropped = self._sessions.stop_sender(prefix, envelope.sender.id, CancelReason.STOP)
        await self._mark_dropped(dropped)
        log.info(
            "sender_stop",
            conversation=prefix,
            user_id=envelope.sender.id,
            stopped=len(stopped),
            dropped=len(dropped),
        )
        if not (stopped or dropped) and self._sessions.winding_down(prefix, envelope.sender.id):
            if not arrival.quiet and answer:
                await self._replies.send(envelope, STILL_STOPPING)
            return
        if forwarded:
            here = bool(stopped or dropped) or answer
        else:
            nothing = not (stopped or dropped)
            asked = nothing and not arrival.quiet  # an owner answers even if it stops nothing
            elsewhere = self._elsewhere is not None and await self._elsewhere(arrival, asked)
            here = not (nothing and elsewhere)
        if here and not arrival.quiet:
            await self._replies.send(envelope, _stopped_text(stopped, dropped))

    async def _mark_dropped(self, dropped: list[TurnIdentity]) -> None:
        for turn in dropped:
            await self._store.inbox.mark(turn.inbox, InboxStatus.FAILED, error="cancelled by /stop")

    async def _closing_parked(self, session_key: str) -> int:
        """Close the cards of the session's parked turns as cancelled (``/stop``,
        ``/new``); how many."""
        return 0 if self._close_parked is None else await self._close_parked(session_key)

    async def _new(self, arrival: Arrival) -> None:
        await self._closing_parked(arrival.session_key)
        await self._store.history.reset(arrival.session_key)
        log.info("session_new", session=arrival.session_key)
        if not arrival.quiet:
            await self._replies.send(arrival.envelope, NEW_SESSION)


def _stopped_text(stopped: list[TurnIdentity], dropped: list[TurnIdentity]) -> str:
    if not stopped and not dropped:
        return NOTHING_OF_YOURS
    lines = [f"Stopped {_turns(len(stopped))}" + (":" if stopped else ".")]
    lines += [f"• {_where(turn)}: “{_gist(turn.envelope.text)}”" for turn in stopped]
    if dropped:
        lines.append(f"Dropped {_turns(len(dropped))} waiting behind them.")
    return "\n".join(lines)


def _turns(count: int) -> str:
    return f"{count} turn" if count == 1 else f"{count} turns"


def _where(turn: TurnIdentity) -> str:
    thread = turn.envelope.thread_id
    return f"in thread {thread}" if thread else "at the top level"


def _gist(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
