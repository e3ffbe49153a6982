"""An OpenAI-compatible transcription endpoint: ``POST <base_url>/audio/transcriptions``.

The audio goes as multipart form data (``file``, ``model``, ``response_format=json``, and
``language`` when there is a hint), with ``Authorization: Bearer <key>`` when the key's
environment variable is set (a local faster-whisper or whisper.cpp server needs none). Each
exchange is one attempt of the model's retry ladder (:class:`bot.providers.retry.Retrier`):
a timeout, a lost connection or a retryable status is tried again after the same backoff,
honouring ``Retry-After``; what is left when the retries are spent is a
:class:`~bot.errors.ProviderError` whose sentence names the provider, never the key or the
body. A reply is read at most :data:`MAX_REPLY_BYTES` deep.
"""

from __future__ import annotations

import json
import os
from typing import Any

import aiohttp

from bot.config.transcription import TranscriptionProviderConfig
from bot.providers.base import StreamSink
from bot.providers.endpoint import shown_url
from bot.providers.retry import (
    AttemptFailed,
    Retrier,
    RetryPolicy,
    connection_lost,
    not_json_failure,
    timeout_failure,
    unreadable_failure,
)
from bot.transcription.base import Clip, Transcript

#: The most of a reply read: a transcript of the longest allowed note is far smaller.
MAX_REPLY_BYTES = 4 * 1024 * 1024
#: The most of a transcript the model is given (ten minutes of speech is about 9,000).
MAX_TRANSCRIPT_CHARS = 30_000


class OpenAITranscriber:
    """``[transcription.providers.<name>]`` of ``kind = "openai"`` (module doc)."""

    def __init__(self, name: str, config: TranscriptionProviderConfig) -> None:
        self.name = name
        self.model = config.model
        self._config = config
        self._url = config.base_url.rstrip("/") + "/audio/transcriptions"
        self._retrier = Retrier(
            provider=f"transcription provider {name}",
            policy=RetryPolicy(max_retries=config.max_retries),
        )

    async def transcribe(self, clip: Clip) -> Transcript:
        async def attempt(_: StreamSink | None) -> Transcript:
            return await self._attempt(clip)

        return await self._retrier.run(attempt, None, timeout_s=self._config.timeout_s)

    async def _attempt(self, clip: Clip) -> Transcript:
        config = self._config
        headers = {}
        key = os.environ.get(config.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        form = aiohttp.FormData()
        form.add_field("model", config.model)
        form.add_field("response_format", "json")
        if clip.language:
            form.add_field("language", clip.language)
        provider = self._retrier.provider
        timeout = aiohttp.ClientTimeout(total=config.timeout_s)
        try:
            with clip.path.open("rb") as audio:
                form.add_field(
                    "file", audio, filename=_upload_name(clip), content_type=clip.mime_type
                )
                async with (
                    aiohttp.ClientSession(timeout=timeout) as session,
                    session.post(self._url, data=form, headers=headers) as response,
                ):
                    body = await _read_capped(response, provider)
                    if response.status >= 400:
                        raise self._retrier.status_failure(
                            response.status,
                            dict(response.headers),
                            detail=body[:200].decode("utf-8", "replace"),
                        )
        except TimeoutError:
            raise timeout_failure(provider, config.timeout_s) from None
        except aiohttp.ClientConnectorError:
            raise connection_lost(provider, shown_url(self._url), never_connected=True) from None
        except aiohttp.ClientError:
            raise connection_lost(provider, shown_url(self._url), never_connected=False) from None
        return self._read(body, clip)

    def _read(self, body: bytes, clip: Clip) -> Transcript:
        provider = self._retrier.provider
        try:
            data: Any = json.loads(body)
        except ValueError:
            raise not_json_failure(provider) from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise unreadable_failure(provider)
        duration = data.get("duration")
        if not isinstance(duration, int | float) or isinstance(duration, bool) or duration < 0:
            duration = clip.duration_s or 0.0
        return Transcript(
            text=" ".join(data["text"].split())[:MAX_TRANSCRIPT_CHARS],
            duration_s=float(duration),
            provider=self.name,
            model=self.model,
        )


async def _read_capped(response: aiohttp.ClientResponse, provider: str) -> bytes:
    """The reply's body, read a piece at a time and never past :data:`MAX_REPLY_BYTES`."""
    body = bytearray()
    async for piece in response.content.iter_chunked(64 * 1024):
        body += piece
        if len(body) > MAX_REPLY_BYTES:
            raise AttemptFailed(f"{provider} sent a reply larger than allowed", retryable=False)
    return bytes(body)


def _upload_name(clip: Clip) -> str:
    """The file name sent: the endpoints pick the decoder by its extension."""
    extension = {
        "audio/ogg": "ogg",
        "audio/wav": "wav",
        "audio/mpeg": "mp3",
        "audio/flac": "flac",
        "audio/mp4": "m4a",
        "video/mp4": "mp4",
        "audio/webm": "webm",
        "video/webm": "webm",
    }.get(clip.mime_type, "ogg")
    return f"audio.{extension}"
