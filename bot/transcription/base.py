"""What a transcription is given and gives back, and the one-method provider protocol."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class Clip:
    """One saved audio file to transcribe: where it is, its ``name`` as sent, its media
    type (by content, :mod:`bot.transcription.audio`), its length when known, and the
    language hint (an ISO 639-1 code, or None)."""

    path: Path
    name: str
    mime_type: str
    duration_s: float | None
    language: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """What a provider heard: ``text`` (may be empty: no words recognised), the audio's
    length (``duration_s``: the provider's, else the clip's; 0 when neither knows), and
    which configured provider and model answered."""

    text: str
    duration_s: float
    provider: str
    model: str


class Transcriber(Protocol):
    """One configured transcription provider (``[transcription.providers.<name>]``).

    :meth:`transcribe` is called once per clip, after access, rate limits and budgets let
    the message through; it raises :class:`~bot.errors.TranscriptionError` (or
    :class:`~bot.errors.ProviderError` once its retries are spent) with a sentence a user
    may read, never a key or a response body, and must not write to the clip."""

    name: str
    model: str

    async def transcribe(self, clip: Clip) -> Transcript: ...
