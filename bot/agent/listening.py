"""One turn's voice notes: transcribed after the files are downloaded, before the model is
called (:class:`~bot.transcription.voice.VoiceNotes`).

The runner asks :func:`listening` for a :class:`Listening` when a message brought audio
and ``[transcription]`` is on; none is made for a turn one of whose budgets is used up
(the turn is refused without paying for a transcription). Its :meth:`Listening.listen` is
the attachment ingest's ``listen``: it transcribes, records each transcription's usage
(seconds of audio, and cost with ``[pricing]``), and hands the lines back for the user
message. :meth:`Listening.after` then posts the transcripts back when ``echo`` is on, and
says what to answer instead of a turn when the message brought nothing but audio that could
not be transcribed.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.agent.turn import AgentBundle
from bot.attachments.ingest import SavedFile
from bot.channel import Channel
from bot.transcription import lines
from bot.transcription.echo import post_echo
from bot.transcription.voice import AudioInput, Heard, VoiceNotes, wants
from bot.turn import TurnIdentity


class Listening:
    """The voice notes of one turn (module doc)."""

    def __init__(self, voice: VoiceNotes, bundle: AgentBundle, turn: TurnIdentity) -> None:
        self._voice = voice
        self._bundle = bundle
        self._turn = turn
        self.heard = Heard()

    async def listen(self, files: Sequence[SavedFile]) -> Sequence[str]:
        inputs = [
            AudioInput(
                index=f.index, attachment=f.attachment, name=f.name, path=f.path, size=f.size
            )
            for f in files
        ]
        self.heard = heard = await self._voice.hear(self._turn, inputs)
        meter = self._bundle.usage
        if meter is not None:
            for transcript, latency_s in heard.new:
                meter.transcribed(
                    self._turn,
                    agent=self._bundle.name,
                    provider=transcript.provider,
                    model=transcript.model,
                    seconds=transcript.duration_s,
                    latency_s=latency_s,
                )
        return heard.lines

    async def after(self, channel: Channel | None) -> str | None:
        """Post the transcripts back (``echo``); the user's line to answer instead of a
        turn when the message brought only audio and none of it was transcribed, else
        None."""
        heard = self.heard
        turn = self._turn
        envelope = turn.envelope
        if self._voice.echo and channel is not None and envelope.announce:
            spoken = [(a, t) for a, t in heard.transcripts if t.text]
            if spoken:
                text = "\n\n".join(lines.echo(a, t.text) for a, t in spoken)
                await post_echo(self._bundle.services.store, channel, turn, text)
        only_audio = all(wants(a) for a in envelope.attachments)
        if heard.failures and not heard.transcripts and only_audio and not envelope.text.strip():
            return "\n".join(heard.failures)
        return None


async def listening(
    voice: VoiceNotes | None, bundle: AgentBundle, turn: TurnIdentity
) -> Listening | None:
    """A :class:`Listening` for ``turn``, or None: transcription is off, the message brought
    no audio, or a budget of the turn is used up."""
    if voice is None or not voice.enabled:
        return None
    if not any(wants(a) for a in turn.envelope.attachments):
        return None
    if bundle.usage is not None:
        usage = bundle.usage.turn(turn, agent=bundle.name, provider=bundle.provider.name)
        if await usage.spent():
            return None
    return Listening(voice, bundle, turn)
