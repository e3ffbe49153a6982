"""The configured transcription providers, tried in the order ``transcription.provider``
then ``transcription.fallback``, as the model's chain is: the first that answers transcribes
the clip; after a failure the next is asked, and when all failed, the last one's sentence is
what the user and the model are told."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from bot.config.transcription import TranscriptionConfig
from bot.errors import ProviderError, TranscriptionError
from bot.transcription.base import Clip, Transcriber, Transcript
from bot.transcription.embedded import EmbeddedTranscriber
from bot.transcription.openai_api import OpenAITranscriber

log = structlog.get_logger(__name__)


class TranscriberChain:
    """The providers of one configuration, in the order they are tried."""

    def __init__(self, providers: Sequence[Transcriber]) -> None:
        self.providers = tuple(providers)

    @classmethod
    def configured(cls, config: TranscriptionConfig) -> TranscriberChain:
        built: list[Transcriber] = []
        for name in config.chain():
            table = config.providers[name]
            if table.kind == "embedded":
                built.append(EmbeddedTranscriber(name, table, max_s=config.max_duration_s))
            else:
                built.append(OpenAITranscriber(name, table))
        return cls(built)

    async def transcribe(self, clip: Clip) -> Transcript:
        """The first provider's transcript; TranscriptionError with the last failure's
        sentence when every one failed."""
        last = "no transcription provider is configured"
        for provider in self.providers:
            try:
                return await provider.transcribe(clip)
            except (ProviderError, TranscriptionError) as exc:
                last = str(exc)
                log.warning(
                    "transcription_failed",
                    provider=provider.name,
                    reason=type(exc).__name__,
                    error=last,
                )
        raise TranscriptionError(last)
