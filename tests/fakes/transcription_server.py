"""An OpenAI-compatible transcription server on loopback: ``POST /v1/audio/transcriptions``.

Usage::

    async with TranscriptionFake() as fake:
        fake.text = "check the deploy status"          # what every request is answered
        fake.queue_error(503)                          # the next request fails so
        fake.broken = True                             # every request gets HTTP 500
        fake.raw = b"<html>"                           # answered as it is, not JSON
        ...
        fake.requests[0].audio                         # each upload's bytes, model, language

It answers as OpenAI documents the endpoint: multipart form data with ``file`` and ``model``
(400 without either), the file's type judged by its name's extension among ``flac, mp3, mp4,
mpeg, mpga, m4a, ogg, wav, webm`` (400 otherwise), at most 25 MB (413), and
``response_format=json`` answered ``{"text": ...}``. A key is required only when ``key`` is
set (401 otherwise), as a local whisper server takes none.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.loopback import LoopbackFake, LoopbackServer

MAX_BYTES = 25 * 1024 * 1024
FORMATS = frozenset({"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """One request as received: the file's bytes and name, and the form's fields."""

    audio: bytes
    filename: str
    content_type: str
    model: str
    language: str | None
    response_format: str | None
    authorization: str | None


class TranscriptionFake(LoopbackFake):
    def __init__(self, *, key: str | None = None) -> None:
        self.key = key
        self.text = "hello from the transcription fake"
        self.broken = False
        #: answered instead of JSON when set (a proxy's HTML page, a runaway body)
        self.raw: bytes | None = None
        self.requests: list[Upload] = []
        self.received = asyncio.Event()
        self._errors: deque[int] = deque()
        self._server = LoopbackServer()

    @property
    def base_url(self) -> str:
        return self._server.url("/v1")

    def queue_error(self, status: int) -> None:
        self._errors.append(status)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BYTES + 1024 * 1024)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        return app

    async def _transcribe(self, request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization")
        if self.key is not None and authorization != f"Bearer {self.key}":
            return _error(401, "Incorrect API key provided")
        if not request.content_type.startswith("multipart/"):
            return _error(400, "Expected multipart/form-data")
        form = await request.post()
        upload = form.get("file")
        model = form.get("model")
        if not isinstance(upload, web.FileField) or not isinstance(model, str) or not model:
            return _error(400, "file and model are required")
        audio = upload.file.read()
        if len(audio) > MAX_BYTES:
            return _error(413, "Maximum content size limit (26214400) exceeded")
        extension = upload.filename.rsplit(".", 1)[-1].lower()
        if extension not in FORMATS:
            return _error(400, f"Invalid file format. Supported formats: {sorted(FORMATS)}")
        language = form.get("language")
        response_format = form.get("response_format")
        self.requests.append(
            Upload(
                audio=audio,
                filename=upload.filename,
                content_type=upload.content_type,
                model=model,
                language=language if isinstance(language, str) else None,
                response_format=response_format if isinstance(response_format, str) else None,
                authorization=authorization,
            )
        )
        self.received.set()
        if self._errors:
            return _error(self._errors.popleft(), "queued error")
        if self.raw is not None:
            return web.Response(body=self.raw, content_type="text/html")
        if self.broken:
            return _error(500, "The server had an error while processing your request")
        return web.json_response({"text": self.text})


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error"}}, status=status
    )
