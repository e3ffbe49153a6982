"""``[transcription]``: voice notes and audio files turned into text (docs/attachments.md).

Off until ``provider`` names one of ``[transcription.providers.<name>]``. A provider is an
OpenAI-compatible ``/audio/transcriptions`` endpoint (``kind = "openai"``: OpenAI, a local
faster-whisper or whisper.cpp server, any compatible service) or the embedded offline engine
(``kind = "embedded"``: PocketSphinx's US English model, the ``voice`` extra), tried in the
order ``provider`` then ``fallback``, like the model's chain.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bot.config_model import ConfigModel

MB = 1024 * 1024

#: A language hint: an ISO 639-1 code (``en``, ``de``), which the endpoints take as is.
LANGUAGE = r"^[a-z]{2,3}$"


class TranscriptionProviderConfig(ConfigModel):
    """One ``[transcription.providers.<name>]`` table. ``kind = "openai"`` posts the audio
    to ``base_url``'s ``/audio/transcriptions`` with ``model``, the key from the environment
    variable ``api_key_env`` (none when it is unset: a local server), within ``timeout_s``,
    retried ``max_retries`` times on the model's retry ladder. ``kind = "embedded"`` runs
    PocketSphinx in a child process, one at a time, stopped after ``timeout_s``; it reads
    US English only and takes no key or URL."""

    kind: Literal["openai", "embedded"] = "openai"
    base_url: str = "https://api.openai.com/v1"
    model: str = "whisper-1"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)

    @model_validator(mode="before")
    @classmethod
    def _embedded_model(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("kind") == "embedded":
            data = dict(data)
            data.setdefault("model", "pocketsphinx-en-us")
        return data


class TranscriptionConfig(ConfigModel):
    """``[transcription]`` (see the module doc). ``echo`` posts each transcript back in the
    conversation, once; ``max_duration_s`` and ``max_bytes`` refuse longer or larger audio
    before it is sent anywhere; ``language`` is the hint given to the provider unless the
    channel's or the agent's ``transcription_language`` says otherwise."""

    provider: str | None = None
    fallback: list[str] = Field(default=[])
    providers: dict[str, TranscriptionProviderConfig] = Field(default={})
    echo: bool = False
    max_duration_s: float = Field(default=600.0, gt=0)
    max_bytes: int = Field(default=25 * MB, ge=1)
    language: str | None = Field(default=None, pattern=LANGUAGE)

    @model_validator(mode="after")
    def _known_providers(self) -> TranscriptionConfig:
        if self.provider is None:
            if self.fallback:
                raise ValueError("transcription.fallback is set, but transcription.provider is not")
            return self
        for name in [self.provider, *self.fallback]:
            if name not in self.providers:
                raise ValueError(
                    f"transcription.provider/fallback names {name!r}, but "
                    f"[transcription.providers] defines only {sorted(self.providers)}"
                )
        return self

    @property
    def enabled(self) -> bool:
        """Whether voice notes are transcribed at all."""
        return self.provider is not None

    def chain(self) -> list[str]:
        """The providers' names in the order they are tried."""
        return [] if self.provider is None else [self.provider, *self.fallback]
