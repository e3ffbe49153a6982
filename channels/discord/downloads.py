"""The bytes of a file a Discord user attached (:class:`~bot.channel.AttachmentDownloads`).

Discord serves attachments from its CDN at signed URLs that expire (:mod:`channels.discord.cdn`).
A download goes to the URL the message carried while it is valid; one that has expired, or
that the CDN no longer honours (404 or 403), is renewed by fetching the message again through
the REST API (with the bot's token, as every REST call) for the attachment's fresh URL, and
tried once more. The CDN itself needs no token, and none is sent to it: the download is a
plain GET on a session of its own, without discord.py's authorisation.

Every address passes :class:`~channels.discord.cdn.CdnHosts` before it is fetched: the
attachment's URL, a renewed one and every redirect's (followed by hand, at most
:data:`MAX_REDIRECTS`), so no attachment can make the bot fetch an arbitrary address
(:class:`~bot.errors.AttachmentRefused`). The size the message states is checked before
anything is fetched, then the body is streamed in chunks and cut off as soon as it runs over
the limit or over that stated size (:class:`~bot.errors.AttachmentTooLarge`).

Errors are :class:`~bot.errors.AttachmentError` with one plain sentence naming the file
(never its URL); logs name the attachment by id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import discord
import structlog
import yarl

from bot.envelope import Attachment, ChannelRef
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge
from channels.discord.cdn import AttachmentRef, CdnHosts, url_expired
from channels.discord.client import LOGIN_WAIT_S, Connection

log = structlog.get_logger(__name__)

#: The largest attachment Discord hosts (a Nitro subscriber's upload, 500 MB). Discord sets no
#: lower limit on what a bot downloads, so ``attachments.max_bytes`` is what bounds it.
DOWNLOAD_LIMIT = 500 * 1000 * 1000
#: Redirects followed from the CDN, each checked like the first address.
MAX_REDIRECTS = 3
CHUNK_BYTES = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_GONE = frozenset({403, 404})
_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=15, sock_read=30)


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB".replace(".0 MB", " MB")


class _Gone(Exception):
    """The CDN answered 404 or 403: the URL expired or was revoked."""


class Downloads:
    """Attachment downloads for one Discord adapter."""

    def __init__(self, ref: ChannelRef, connection: Connection, *, api_base_url: str | None):
        self._connection = connection
        self._hosts = CdnHosts(api_base_url)
        self._log = log.bind(channel=str(ref))

    def download_limit(self) -> int:
        return DOWNLOAD_LIMIT

    async def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        name = attachment.name or "the file"
        where = AttachmentRef.decode(attachment.ref)
        self._check_size(name, attachment.size)
        url, renewed = where.url, False
        if url_expired(url) and where.renewable:
            url, renewed = await self._renewed(where, name, reason="expired"), True
        async with aiohttp.ClientSession(timeout=_TIMEOUT) as session:
            while True:
                try:
                    response = await self._get(session, url, name)
                except _Gone:
                    if renewed or not where.renewable:
                        raise AttachmentError(
                            f"{name} is no longer available on Discord: its link has expired."
                        ) from None
                    url, renewed = await self._renewed(where, name, reason="refused"), True
                    continue
                async with response:
                    async for chunk in self._body(response, name, attachment.size):
                        yield chunk
                return

    def _check_size(self, name: str, size: int | None) -> None:
        if size is not None and size > DOWNLOAD_LIMIT:
            raise AttachmentTooLarge(
                f"{name} is larger than {_megabytes(DOWNLOAD_LIMIT)}, the most a file from "
                "Discord may be."
            )

    async def _get(
        self, session: aiohttp.ClientSession, url: str, name: str
    ) -> aiohttp.ClientResponse:
        """The CDN's 200 response for ``url``, redirects followed (each hop checked);
        :class:`_Gone` on 404 or 403."""
        current = yarl.URL(url, encoded=True) if self._hosts.allows(url) else None
        for _ in range(MAX_REDIRECTS + 1):
            if current is None or not self._hosts.allows(current):
                raise AttachmentRefused(
                    f"{name} is not on Discord's own file servers, so it was not downloaded."
                )
            try:
                response = await session.get(current, allow_redirects=False)
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                raise AttachmentError(
                    f"Downloading {name} from Discord failed ({type(exc).__name__})."
                ) from None
            if response.status == 200:
                return response
            response.release()
            if response.status in _GONE:
                raise _Gone
            if response.status not in _REDIRECTS or "Location" not in response.headers:
                raise AttachmentError(
                    f"Downloading {name} from Discord failed (HTTP {response.status})."
                )
            try:
                current = current.join(yarl.URL(response.headers["Location"]))
            except ValueError:
                current = None
        raise AttachmentError(f"Downloading {name} from Discord failed (too many redirects).")

    async def _body(
        self, response: aiohttp.ClientResponse, name: str, size: int | None
    ) -> AsyncIterator[bytes]:
        """The response's bytes in chunks, cut off over the limit or the stated size."""
        if response.content_length is not None:
            self._check_size(name, response.content_length)
        read = 0
        try:
            async for chunk in response.content.iter_chunked(CHUNK_BYTES):
                read += len(chunk)
                self._check_size(name, read)
                if size is not None and read > size:
                    raise AttachmentError(
                        f"Downloading {name} from Discord failed: more arrived than its "
                        f"{_megabytes(size)}."
                    )
                yield chunk
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise AttachmentError(
                f"Downloading {name} from Discord failed ({type(exc).__name__})."
            ) from None

    async def _renewed(self, where: AttachmentRef, name: str, *, reason: str) -> str:
        """The attachment's current URL, read off its message fetched anew."""
        client = await self._connection.logged_in(LOGIN_WAIT_S)
        if client is None:
            raise AttachmentError(
                f"{name} could not be downloaded: its link has expired and the bot is not "
                "connected to Discord to renew it."
            )
        channel = client.get_partial_messageable(int(where.channel_id))
        try:
            message = await channel.fetch_message(int(where.message_id))
        except discord.NotFound:
            raise AttachmentError(
                f"{name} is no longer available on Discord: its message was deleted."
            ) from None
        except discord.HTTPException as exc:
            raise AttachmentError(
                f"{name} could not be downloaded: renewing its link failed (HTTP {exc.status})."
            ) from None
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise AttachmentError(
                f"{name} could not be downloaded: renewing its link failed ({type(exc).__name__})."
            ) from None
        for item in message.attachments:
            if str(item.id) == where.attachment_id:
                self._log.info(
                    "discord_attachment_renewed", attachment_id=where.attachment_id, reason=reason
                )
                self._check_size(name, item.size)
                return item.url
        raise AttachmentError(f"{name} is no longer available on Discord: it was removed.")
