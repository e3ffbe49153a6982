"""The bytes of a file a Telegram user sent: ``getFile``, then the file URL, streamed.

``getFile`` names the file's path on the Bot API server and its size; the bytes are then
fetched from ``file_base_url`` + the bot token + that path, the way Telegram serves them
(a self-hosted Bot API server's ``file_base_url`` is respected). Rules:

- The size ``getFile`` reports (or the one the message carried) is checked against
  ``download_max_bytes`` (the Bot API serves 20 MB) before anything is fetched; Telegram's
  own "file is too big" answer means the same. Both raise
  :class:`~bot.errors.AttachmentTooLarge`, and so does a body that grows past the limit.
- Bytes come only from the host of ``file_base_url``: a path that is a URL of another host,
  or a redirect to one (every hop is checked), raises :class:`~bot.errors.AttachmentRefused`
  and nothing is fetched from it. A path on the server's own disk (a Bot API server in
  ``--local`` mode) is refused too: the bot reads no local file a server names.
- The file URL carries the bot token, so it is never logged and never put in an error: every
  failure is an :class:`~bot.errors.AttachmentError` whose message is one plain sentence,
  raised without its cause (an HTTP error's text would name the URL).
- The body is streamed in chunks as it arrives (one HTTP client per download, on the
  adapter's TLS context); the caller stops reading when it has enough.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from urllib.parse import quote

import httpx
import structlog
from telegram import Bot, File
from telegram.error import BadRequest, TelegramError

from bot.envelope import Attachment, ChannelRef
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge
from channels.telegram.config import TelegramChannelConfig
from channels.telegram.media import human_size

log = structlog.get_logger(__name__)

CHUNK_BYTES = 64 * 1024
MAX_REDIRECTS = 3
TIMEOUT = httpx.Timeout(30.0, read=60.0)
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme, 0)


def _named(attachment: Attachment) -> str:
    """How the sentences about ``attachment`` start: its name, else "The photo"..."""
    if attachment.name:
        return attachment.name
    return "The photo" if attachment.kind == "image" else f"The {attachment.kind}"


class TelegramDownloads:
    """:class:`~bot.channel.AttachmentDownloads` for one bot."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        config: TelegramChannelConfig,
        bot: Bot,
        tls: ssl.SSLContext,
    ) -> None:
        self._ref = ref
        self._config = config
        self._bot = bot
        self._tls = tls
        self._home = _origin(httpx.URL(config.file_base_url))

    def download_limit(self) -> int:
        return self._config.download_max_bytes

    def _too_large(self, name: str, size: int | None) -> AttachmentTooLarge:
        """``size`` None: larger than the limit by Telegram's word, or by what arrived."""
        limit = human_size(self.download_limit())
        if size is None:
            return AttachmentTooLarge(
                f"{name} is larger than the {limit} Telegram lets bots download."
            )
        return AttachmentTooLarge(
            f"{name} is {human_size(size)}; Telegram lets bots download files of at most {limit}."
        )

    async def _get_file(self, attachment: Attachment, name: str) -> File:
        refused: AttachmentError
        try:
            return await self._bot.get_file(attachment.ref)
        except BadRequest as exc:
            if "too big" in exc.message.lower():
                refused = self._too_large(name, None)
            else:
                refused = AttachmentError(f"{name} was refused by Telegram ({exc.message}).")
        except TelegramError:
            refused = AttachmentError(
                f"{name} could not be fetched: the Telegram Bot API did not answer."
            )
        # Raised outside the handler, so the library's error is not even its context.
        raise refused

    def _file_url(self, file: File, name: str) -> httpx.URL:
        """The URL of ``file``'s bytes. PTB prefixes the server's path with the token's file
        URL (unless the path is a file on this machine); the path alone decides."""
        given = file.file_path or ""
        prefix = self._bot.base_file_url + "/"
        path = given.removeprefix(prefix)
        if not path:
            raise AttachmentError(f"{name} has no path on the Bot API server to download it from.")
        if path.startswith("/"):
            raise AttachmentRefused(
                f"{name} was not downloaded: the Bot API server keeps it on its own disk "
                "(local mode), and the bot reads no local file a server names."
            )
        if "://" in path:
            url = httpx.URL(path)
            self._check_host(url, name)
            return url
        return httpx.URL(prefix + quote(path))

    def _check_host(self, url: httpx.URL, name: str) -> None:
        if _origin(url) != self._home:
            log.warning(
                "telegram_download_refused", channel=str(self._ref), host=url.host or "(none)"
            )
            raise AttachmentRefused(
                f"{name} was not downloaded: its address is not on the Bot API server "
                f"({url.host or 'no host'})."
            )

    async def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        name = _named(attachment)
        file = await self._get_file(attachment, name)
        size = file.file_size if file.file_size is not None else attachment.size
        if size is not None and size > self.download_limit():
            raise self._too_large(name, size)
        url = self._file_url(file, name)
        failed = False
        try:
            async with httpx.AsyncClient(
                verify=self._tls, timeout=TIMEOUT, follow_redirects=False
            ) as client:
                async for chunk in self._stream(client, url, name):
                    yield chunk
        except httpx.HTTPError:
            failed = True  # its text names the URL, and the URL holds the token
        if failed:
            raise AttachmentError(
                f"{name} could not be downloaded from Telegram (the connection failed)."
            )

    async def _stream(
        self, client: httpx.AsyncClient, url: httpx.URL, name: str
    ) -> AsyncIterator[bytes]:
        limit = self.download_limit()
        for _hop in range(MAX_REDIRECTS + 1):
            async with client.stream("GET", url) as response:
                if response.is_redirect:
                    location = response.headers.get("location", "")
                    url = url.join(location)
                    self._check_host(url, name)
                    continue
                if response.status_code != httpx.codes.OK:
                    raise AttachmentError(
                        f"{name} could not be downloaded from Telegram "
                        f"(HTTP {response.status_code})."
                    )
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    raise self._too_large(name, int(length))
                received = 0
                async for chunk in response.aiter_bytes(CHUNK_BYTES):
                    received += len(chunk)
                    if received > limit:
                        raise self._too_large(name, None)
                    yield chunk
                return
        raise AttachmentError(f"{name} was not downloaded: too many redirects.")
