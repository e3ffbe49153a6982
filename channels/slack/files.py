"""Files on Slack: what users attach, downloaded with the bot token; files the bot posts.

**Downloads** (:class:`~bot.channel.AttachmentDownloads`). An attachment's ref
(:class:`~channels.slack.file_hosts.FileRef`) names the file and its
``url_private_download``; when the event gave no URL (``file_access: check_file_info``, an
envelope from before refs carried one) ``files.info`` is asked. The URL is fetched with
``Authorization: Bearer <bot token>`` and redirects are followed here, one hop at a time, so
each is checked first: only Slack's own file hosts (:class:`FileHosts`), at most
:data:`MAX_HOPS`, and the token only to the first URL's origin. A host that is not Slack's
raises :class:`~bot.errors.AttachmentRefused` before anything is sent to it. Slack answers a
token without the ``files:read`` scope with its sign-in page (HTML, status 200) instead of
the file: that, any status other than 2xx, and a failed connection raise
:class:`~bot.errors.AttachmentError` with a sentence a user may read. The body is streamed
in chunks and stops once it passes ``download_max_bytes`` (Slack's own 1 GB by default; the
caller stops at ``attachments.max_bytes`` too). No URL is logged whole: a log line names the
host only.

**Uploads** (:class:`~bot.channel.FileSending`), through Slack's external upload flow with
slack_sdk's ``files_upload_v2``: ``files.getUploadURLExternal``, the bytes posted to the URL
Slack returns (without the token), then ``files.completeUploadExternal`` sharing the file in
the target's conversation and thread (``files.upload`` is retired and never called). The
caption, rendered as mrkdwn, is the upload's ``initial_comment``. A file share carries no
message metadata, so a keyed send (``key``, for the delivery check of
:mod:`channels.slack.delivery_check`) posts the file first and then its caption (the file's
name when there is none) as a message with the key's metadata: a crash between the two leaves
the key unfound, so recovery sends again and the file may appear twice, but is never lost.
Files over ``upload_max_bytes`` are refused before anything is sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import aiohttp
import structlog
from slack_sdk.errors import SlackRequestError

from bot.channel import SentMessage
from bot.envelope import Attachment, ChannelRef, DeliveryTarget
from bot.errors import (
    AttachmentError,
    AttachmentRefused,
    AttachmentTooLarge,
    ChannelError,
)
from channels.slack.api import SlackCallFailed, SlackWebApi
from channels.slack.command_replies import CommandReplies
from channels.slack.file_hosts import FileHosts, FileRef, host_of, same_origin

log = structlog.get_logger(__name__)

#: Redirects followed at most before a download is given up.
MAX_HOPS = 5
CHUNK_BYTES = 64 * 1024
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=15, sock_read=60)
_UPLOAD_REFUSALS = {
    "missing_scope": "Slack refused the upload: the app needs the files:write scope.",
    "not_in_channel": "The bot is not a member of that Slack conversation (invite it first).",
    "channel_not_found": "Slack does not know that conversation, or the bot cannot see it.",
    "file_uploads_disabled": "File uploads are disabled in this Slack workspace.",
    "file_upload_size_restricted": "The file is larger than this Slack workspace allows.",
}
_SCOPE_HINT = "the Slack app needs the files:read scope (add it and reinstall the app)"


def _mime(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


class SlackFiles:
    """Downloads and uploads for :class:`~channels.slack.adapter.SlackChannel` (module
    docstring): the channel's ``downloads``; its ``files`` are its outbound module's, which
    uploads through :meth:`upload`."""

    def __init__(
        self,
        *,
        ref: ChannelRef,
        api: SlackWebApi,
        token: str,
        api_base_url: str,
        download_max_bytes: int,
        upload_max_bytes: int,
        command_replies: CommandReplies,
    ) -> None:
        self._ref = ref
        self._api = api
        self._token = token
        self._hosts = FileHosts.for_api(api_base_url)
        self._max_download = download_max_bytes
        self._max_upload = upload_max_bytes
        self._command_replies = command_replies

    # -- downloads ---------------------------------------------------------------------------

    def download_limit(self) -> int:
        return self._max_download

    async def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        """The bytes of ``attachment``, in chunks (module docstring)."""
        if attachment.size is not None and attachment.size > self._max_download:
            raise self._too_large()
        file = FileRef.decode(attachment.ref)
        url = file.url or await self._url_of(file.file_id)
        first = url
        async with aiohttp.ClientSession(
            timeout=_TIMEOUT, cookie_jar=aiohttp.DummyCookieJar()
        ) as session:
            for _ in range(MAX_HOPS + 1):
                if not self._hosts.allows(url):
                    log.warning(
                        "slack_file_host_refused", channel=str(self._ref), host=host_of(url)
                    )
                    raise AttachmentRefused("The file's address is not one of Slack's own hosts.")
                with_token = same_origin(url, first)
                headers = {"Authorization": f"Bearer {self._token}"} if with_token else {}
                try:
                    async with session.get(url, headers=headers, allow_redirects=False) as resp:
                        if resp.status in _REDIRECTS:
                            url = urljoin(url, resp.headers.get("Location", ""))
                            continue
                        self._check(resp, attachment, with_token=with_token)
                        received = 0
                        async for chunk in resp.content.iter_chunked(CHUNK_BYTES):
                            received += len(chunk)
                            if received > self._max_download:
                                raise self._too_large()
                            yield chunk
                        return
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    log.warning(
                        "slack_file_download_failed",
                        channel=str(self._ref),
                        host=host_of(url),
                        error=type(exc).__name__,
                    )
                    raise AttachmentError(
                        "The file could not be downloaded from Slack (the connection failed)."
                    ) from None
        raise AttachmentError("Slack redirected the download too many times.")

    def _too_large(self) -> AttachmentTooLarge:
        mb = self._max_download / 1_000_000
        return AttachmentTooLarge(
            f"The file is larger than the {mb:g} MB this Slack channel downloads."
        )

    def _check(
        self, resp: aiohttp.ClientResponse, attachment: Attachment, *, with_token: bool
    ) -> None:
        """Raise unless ``resp`` is the file itself (``with_token``: the request carried the
        bot token, so a refusal is the token's)."""
        status = resp.status
        if status in (401, 403) and with_token:
            raise AttachmentError(f"Slack refused to hand over the file: {_SCOPE_HINT}.")
        if status in (404, 410):
            raise AttachmentError("Slack no longer has this file (it was deleted or unshared).")
        if not 200 <= status < 300:
            log.warning("slack_file_download_failed", channel=str(self._ref), status=status)
            raise AttachmentError(f"Slack did not hand over the file (HTTP {status}).")
        served = _mime(resp.headers.get("Content-Type", ""))
        if served == "text/html" and _mime(attachment.mime_type) != "text/html":
            # Slack's sign-in page, sent when the token may not read files.
            log.warning("slack_file_scope_missing", channel=str(self._ref))
            raise AttachmentError(
                f"Slack sent its sign-in page instead of the file: {_SCOPE_HINT}."
            )
        length = resp.content_length
        if length is not None and length > self._max_download:
            raise self._too_large()

    async def _url_of(self, file_id: str) -> str:
        """The download URL ``files.info`` gives for ``file_id``."""
        if not file_id:
            raise AttachmentError("The message named no Slack file to download.")
        try:
            data = await self._api.call(
                "files.info", lambda: self._api.client.files_info(file=file_id)
            )
        except SlackCallFailed as exc:
            if exc.code in ("missing_scope", "no_permission"):
                raise AttachmentError(
                    f"Slack refused to describe the file: {_SCOPE_HINT}."
                ) from None
            if exc.code in ("file_not_found", "file_deleted"):
                raise AttachmentError("Slack no longer has this file.") from None
            raise AttachmentError(f"Slack could not describe the file ({exc.code}).") from None
        info = data.get("file")
        info = info if isinstance(info, Mapping) else {}
        url = info.get("url_private_download") or info.get("url_private")
        if not isinstance(url, str) or not url:
            raise AttachmentError("Slack gave no address to download this file from.")
        return url

    # -- uploads -----------------------------------------------------------------------------

    def upload_limit(self, target: DeliveryTarget) -> int:
        return self._max_upload

    async def upload(
        self, target: DeliveryTarget, path: Path, *, name: str, comment: str | None
    ) -> SentMessage | None:
        """Share the file at ``path`` as ``name`` in the target's conversation and thread
        with ``comment`` (mrkdwn) under it, through ``files_upload_v2``; the file's message
        when Slack names it. Raises :class:`~bot.errors.ChannelError` with a plain sentence:
        a file over :meth:`upload_limit`, one that cannot be read, a refusal."""
        if self._command_replies.answers(target):
            raise ChannelError("Slack cannot post a file as a private answer to a command.")
        data = await asyncio.to_thread(_read, path, self._max_upload)
        params: dict[str, Any] = {
            "file": data,
            "filename": name,
            "title": name,
            "channel": target.conversation_id,
        }
        if target.thread_id:
            params["thread_ts"] = target.thread_id
        if comment is not None:
            params["initial_comment"] = comment
        try:
            answer = await self._api.call(
                "files.completeUploadExternal",
                lambda: self._api.client.files_upload_v2(**params),
            )
        except SlackRequestError as exc:
            # the upload URL refused the bytes (slack_sdk's message names the URL: not logged)
            log.warning(
                "slack_file_upload_failed", channel=str(self._ref), error=type(exc).__name__
            )
            raise ChannelError("Slack did not accept the file's bytes.") from None
        except SlackCallFailed as exc:
            raise ChannelError(
                _UPLOAD_REFUSALS.get(exc.code, f"Slack refused the file ({exc.code}).")
            ) from None
        log.info("slack_file_sent", channel=str(self._ref), bytes=len(data))
        return _shared_message(answer, target)


def _read(path: Path, limit: int) -> bytes:
    """The file's bytes, refused with a plain sentence when it cannot be read or is over
    ``limit`` (checked before reading, and again after: it may have grown)."""
    try:
        size = path.stat().st_size
        if size <= limit:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)  # never more than one byte past the limit
            size = max(size, len(data))
    except OSError as exc:
        raise ChannelError(f"The file cannot be read ({exc.strerror}).") from None
    if size > limit:
        raise ChannelError(
            f"The file is {size / 1e6:.1f} MB; this Slack channel posts files up to "
            f"{limit / 1e6:.1f} MB (upload_max_bytes)."
        )
    return data


def _shared_message(data: Mapping[str, Any], target: DeliveryTarget) -> SentMessage | None:
    """The message sharing the uploaded file in ``target``, when the answer's ``shares``
    name it (Slack fills them in asynchronously; often they are not there yet)."""
    file = data.get("file")
    shares = file.get("shares") if isinstance(file, Mapping) else None
    if not isinstance(shares, Mapping):
        return None
    for kind in ("public", "private"):
        where = shares.get(kind)
        posts = where.get(target.conversation_id) if isinstance(where, Mapping) else None
        if isinstance(posts, list) and posts and isinstance(posts[0], Mapping):
            ts = posts[0].get("ts")
            if isinstance(ts, str) and ts:
                return SentMessage(target=target, message_id=ts)
    return None
