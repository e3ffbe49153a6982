"""The turn runner the gateway calls (:data:`bot.turn.TurnRunner`).

For one admitted message it opens a progress message on the message's own channel (none
for a background job), wires ``/stop`` and shutdown to the turn's cancel token, runs
:func:`bot.agent.loop.run_turn` with the current :class:`AgentBundle` of the agent the
gateway routed the message to (``envelope.agent``, :mod:`bot.routing`), and tells the
gateway what to send and whether a shutdown cut the turn short. A message whose agent is no
longer configured (removed by a reload while it waited, or before a restart) is answered by
the ``default`` agent. ``excluded_for`` names the
tools a channel's configuration hides (``channels.<kind>.<alias>.excluded_tools``), added to
the agent's own exclusions for every turn from that channel. A message that came with files
has them read first (``attachments``, :class:`~bot.attachments.ingest.AttachmentIngest`):
the turn's user message then carries a line per file and the images to show, each line
saying only what the agent can do with an image (:func:`~bot.agent.bundles.image_sight`),
and a voice note's transcript as the user's words (``voice``, :mod:`bot.agent.listening`).
What the conversation said around the message (``context``, :mod:`bot.context`: kept group
messages, a thread's earlier messages) is read before the turn starts, only where the
channel's ``context`` settings ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import structlog

from bot import telemetry
from bot.agent.bundles import image_sight
from bot.agent.listening import listening
from bot.agent.loop import agent_removed, resume_turn, run_turn
from bot.agent.turn import AgentBundle, TurnState, TurnStatus
from bot.attachments.ingest import AttachmentIngest
from bot.channel import Channel
from bot.context import ConversationContext
from bot.envelope import ChannelRef
from bot.errors import StorageError
from bot.progress import ChannelProgress
from bot.store.parked import ProgressRef, UnreadableParkRecord
from bot.tools.cancellation import unless_cancelled
from bot.transcription.voice import VoiceNotes
from bot.turn import CancelReason, SessionControl, TurnIdentity, TurnReply

log = structlog.get_logger(__name__)

#: The agent of a message whose own agent is not configured.
FALLBACK_AGENT = "default"


class AgentRunner:
    """Runs turns, each with its agent's bundle (``bundles`` by agent name, ``default``
    among them). ``streams`` names the agents whose primary provider streams (the progress
    message then shows the answer as it is written); ``turn_finished``, when given, is told
    each turn's :class:`~bot.agent.turn.TurnStatus` value (metrics)."""

    def __init__(
        self,
        *,
        bundles: Mapping[str, AgentBundle],
        channel_for: Callable[[ChannelRef], Channel | None],
        streams: frozenset[str] = frozenset(),
        turn_finished: Callable[[str], None] | None = None,
        excluded_for: Callable[[ChannelRef], Sequence[str]] | None = None,
        attachments: AttachmentIngest | None = None,
        context: ConversationContext | None = None,
        voice: VoiceNotes | None = None,
    ) -> None:
        self.bundles = dict(bundles)
        self._context = context
        self._attachments = attachments
        self._voice = voice
        self.streams = streams
        self._channel_for = channel_for
        self._turn_finished = turn_finished
        self._excluded_for = excluded_for

    def update(self, bundles: Mapping[str, AgentBundle], *, streams: frozenset[str]) -> None:
        """Use reloaded agents for every turn that starts from now on."""
        self.bundles = dict(bundles)
        self.streams = streams

    def bundle_for(self, agent: str) -> AgentBundle:
        """Agent ``agent``'s bundle; the default agent's when it is not configured."""
        bundle = self.bundles.get(agent)
        if bundle is None:
            log.warning("agent_not_configured", agent=agent, instead=FALLBACK_AGENT)
            bundle = self.bundles[FALLBACK_AGENT]
        return bundle

    async def __call__(self, turn: TurnIdentity, control: SessionControl) -> TurnReply:
        envelope = turn.envelope
        bundle = self.bundle_for(envelope.agent)
        channel = self._channel_for(envelope.channel)
        progress = (
            ChannelProgress(
                channel,
                envelope.reply_target,
                envelope.capabilities,
                stream=bundle.name in self.streams,
            )
            if channel is not None and not envelope.background
            else None
        )
        excluded = () if self._excluded_for is None else self._excluded_for(envelope.channel)
        replying = self._channel_for(envelope.reply_target.channel)
        state = TurnState(
            turn=turn,
            inbox=turn.inbox,
            excluded_tools=tuple(excluded),
            # the answer's ledger row rides with its history where a crash between the two
            # and the send is settled by looking (bot.gateway.ledger): one trip fewer
            record_answer=replying is not None and replying.delivery is not None,
        )
        if progress is not None:
            if turn.resume is not None:
                await _continue_progress(bundle, turn.resume, progress)
            state.progress = progress
            await progress.start()
        control.on_cancel(state.cancel.cancel)
        if progress is not None:
            state.cancel.on_cancel(progress.stopping)  # shown until the turn has ended
        try:
            if turn.resume is not None and bundle.name != envelope.agent:
                # its agent was removed by a reload: another agent does not take it over
                result = await agent_removed(bundle, turn.resume, envelope.agent)
            elif turn.resume is not None:
                result = await resume_turn(bundle, state, turn.resume)
            elif envelope.attachments and self._attachments is not None:
                # downloaded before the turn's first record: a crash meanwhile leaves the
                # message to recovery, which runs it again from the start
                sight = image_sight(bundle, excluded)
                heard = await listening(self._voice, bundle, turn)
                listen = None if heard is None else heard.listen
                reading = self._attachments.user_message(turn, channel, sight, listen)
                state.user = await unless_cancelled(reading, state.cancel)
                instead = None if heard is None else await heard.after(channel)
                if instead is not None:
                    # nothing to answer: the voice note could not be transcribed
                    return TurnReply(text=instead)
            if turn.resume is None and self._context is not None:
                around = self._context.for_turn(envelope, channel)
                if around is not None:  # None: nothing to show (a DM, context off)
                    state.context = await unless_cancelled(around, state.cancel) or ()
                viewed = self._context.viewed(envelope, channel)
                if viewed is not None:
                    state.viewing = await unless_cancelled(viewed, state.cancel)
            if turn.resume is None:
                result = await run_turn(bundle, state)
            if progress is not None and result.status is TurnStatus.CANCELLED:
                # the message is closed, never left at "⏳"
                progress.stopped(shutdown=state.cancel.reason is CancelReason.SHUTDOWN)
        finally:
            await state.progress.aclose()
        if progress is not None and result.status is TurnStatus.PARKED:
            await _keep_progress(bundle, turn, progress)
        telemetry.note("hatchway.turn.status", result.status.value)
        if self._turn_finished is not None:
            self._turn_finished(result.status.value)
        if result.status is TurnStatus.PARKED:
            # the entry is parked: its resumption answers, once the card is decided
            return TurnReply(text=None, parked=True)
        shutdown = (
            result.status is TurnStatus.CANCELLED and state.cancel.reason is CancelReason.SHUTDOWN
        )
        if shutdown and envelope.background:
            # nobody asked in a scheduled run's conversation: no "ask again" line there; the
            # run is left to start-up recovery, which runs it again under its job's policy
            return TurnReply(text="", interrupted=CancelReason.SHUTDOWN)
        stopped = result.status is TurnStatus.CANCELLED and not shutdown
        return TurnReply(
            text=result.text,
            interrupted=CancelReason.SHUTDOWN if shutdown else None,
            stopped=stopped,
            recorded=state.answer_recorded is not None and state.answer_recorded == result.text,
        )


async def _keep_progress(
    bundle: AgentBundle, turn: TurnIdentity, progress: ChannelProgress
) -> None:
    """A parked turn keeps its progress message with its park record, for its resumption
    to close it (:func:`_continue_progress`) rather than leave it waiting."""
    shown = progress.shown()
    if shown is None:
        return
    try:
        await bundle.services.store.parked.note_progress(turn.turn_id, ProgressRef.bounded(*shown))
    except StorageError as exc:
        log.warning("parked_progress_not_kept", turn_id=turn.turn_id, error=str(exc))


async def _continue_progress(
    bundle: AgentBundle, approval_id: str, progress: ChannelProgress
) -> None:
    """A resumed turn goes on in the progress message its parked turn showed, if kept."""
    try:
        record = await bundle.services.store.parked.get(approval_id)
    except (StorageError, UnreadableParkRecord):
        return  # the resumption itself says so
    if record is not None and record.progress is not None:
        progress.continue_from(record.progress.message_id, record.progress.lines)
