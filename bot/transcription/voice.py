"""What the turn runner calls for a message with audio: :class:`VoiceNotes`.

For each audio file the message brought (a voice note, a video note, an audio file), already
downloaded by the attachment ingest, :meth:`VoiceNotes.hear` returns the line the model
reads (:mod:`bot.transcription.lines`): a transcript kept with the inbox entry from an
earlier run is used as it is; otherwise the file is checked against
``transcription.max_bytes`` and ``max_duration_s`` (the platform's length, else the
container's) and sent to the providers' chain. Files are transcribed one after another,
each kept with the entry as soon as it is done.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from bot.config import Settings
from bot.config.transcription import TranscriptionConfig
from bot.envelope import Attachment
from bot.errors import TranscriptionError
from bot.store import Store
from bot.transcription import lines
from bot.transcription.audio import sniff
from bot.transcription.base import Clip, Transcript
from bot.transcription.kept import keep_transcripts, kept_transcripts
from bot.turn import TurnIdentity

if TYPE_CHECKING:
    from bot.transcription.chain import TranscriberChain

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioInput:
    """One downloaded file of the message: its position in the envelope, the attachment,
    its name as the model's lines show it, where it was saved and its size."""

    index: int
    attachment: Attachment
    name: str
    path: Path
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Heard:
    """What became of a message's audio: ``lines`` for the model (after the user's text),
    ``transcripts`` by the attachment's position (kept or new), ``new`` those paid for in
    this run with how long each call took (usage), and ``failures``, a short line for the
    user per file not transcribed."""

    lines: tuple[str, ...] = ()
    transcripts: tuple[tuple[Attachment, Transcript], ...] = ()
    new: tuple[tuple[Transcript, float], ...] = ()
    failures: tuple[str, ...] = ()


def wants(attachment: Attachment) -> bool:
    """Whether an attachment is transcribed: audio, or a voice or video note."""
    return attachment.kind == "audio" or attachment.voice


class VoiceNotes:
    """Transcribes a message's audio (module doc). ``settings`` are read for each message,
    so a reload applies to the next one; the providers are built again when
    ``[transcription]`` changed."""

    def __init__(self, *, store: Store, settings: Callable[[], Settings]) -> None:
        self._store = store
        self._settings = settings
        self._built: tuple[TranscriptionConfig, TranscriberChain] | None = None

    def _config(self) -> TranscriptionConfig:
        return self._settings().transcription

    def language(self, turn: TurnIdentity) -> str | None:
        """The hint for ``turn``'s message: its channel's ``transcription_language``, else
        its agent's, else ``transcription.language``."""
        settings = self._settings()
        envelope = turn.envelope
        channel = settings.channels.get(envelope.channel.kind, envelope.channel.alias)
        if channel is not None and channel.transcription_language:
            return channel.transcription_language
        try:
            agent = settings.agent_for(envelope.agent).transcription_language
        except KeyError:
            agent = None
        return agent or settings.transcription.language

    @property
    def echo(self) -> bool:
        """Whether transcripts are posted back (``transcription.echo``)."""
        return self._config().echo

    @property
    def enabled(self) -> bool:
        return self._config().enabled

    def chain(self) -> TranscriberChain:
        config = self._config()
        if self._built is None or self._built[0] is not config:
            # the providers' modules (aiohttp, the embedded model's child) at the first
            # voice note only: a text turn has no use for them
            from bot.transcription.chain import TranscriberChain

            self._built = (config, TranscriberChain.configured(config))
        return self._built[1]

    async def hear(self, turn: TurnIdentity, files: Sequence[AudioInput]) -> Heard:
        """The lines of ``files`` that :func:`wants` (see the module doc). Raises nothing
        for what the audio is or how a provider fails."""
        audio = [f for f in files if wants(f.attachment)]
        if not audio:
            return Heard()
        config = self._config()
        language = self.language(turn)
        kept = await kept_transcripts(self._store, turn.inbox)
        found = dict(kept)
        model_lines: list[str] = []
        heard: list[tuple[Attachment, Transcript]] = []
        new: list[tuple[Transcript, float]] = []
        failures: list[str] = []
        for item in audio:
            attachment = item.attachment
            transcript = kept.get(item.index)
            if transcript is None:
                started = time.perf_counter()
                try:
                    transcript = await self._transcribe(item, config, language)
                except TranscriptionError as exc:
                    why = str(exc).rstrip(".")
                    seconds = attachment.duration_s
                    log.warning(
                        "voice_not_transcribed",
                        channel=turn.channel,
                        kind=attachment.kind,
                        error=why,
                    )
                    model_lines.append(
                        lines.not_transcribed(
                            attachment, item.name, seconds, why, shorter="longer" in why
                        )
                    )
                    failures.append(lines.for_user(attachment, why))
                    continue
                new.append((transcript, time.perf_counter() - started))
                found[item.index] = transcript
                await keep_transcripts(self._store, turn.inbox, found)
                log.info(
                    "voice_transcribed",
                    channel=turn.channel,
                    provider=transcript.provider,
                    seconds=round(transcript.duration_s, 1),
                    words=len(transcript.text.split()),
                )
            seconds = transcript.duration_s or attachment.duration_s
            model_lines.append(lines.transcribed(attachment, item.name, seconds, transcript.text))
            heard.append((attachment, transcript))
        return Heard(
            lines=tuple(model_lines),
            transcripts=tuple(heard),
            new=tuple(new),
            failures=tuple(failures),
        )

    async def _transcribe(
        self, item: AudioInput, config: TranscriptionConfig, language: str | None
    ) -> Transcript:
        if item.size > config.max_bytes:
            raise TranscriptionError(
                f"it is larger than the {_megabytes(config.max_bytes)} allowed"
            )
        facts = await asyncio.to_thread(sniff, item.path)
        if not facts.container:
            raise TranscriptionError("it is not audio that can be read")
        duration = item.attachment.duration_s or facts.duration_s
        if duration is not None and duration > config.max_duration_s:
            limit = lines.length(config.max_duration_s)
            raise TranscriptionError(f"it is longer than {limit}")
        clip = Clip(
            path=item.path,
            name=item.name,
            mime_type=facts.mime_type,
            duration_s=duration,
            language=language,
        )
        return await self.chain().transcribe(clip)


def _megabytes(size: int) -> str:
    """``25 MB``, ``1.5 MB``, ``11 KB``, ``900 bytes``."""
    if size >= 1024 * 1024:
        return f"{round(size / (1024 * 1024), 1):g} MB"
    if size >= 1024:
        return f"{round(size / 1024)} KB"
    return f"{size} bytes"
