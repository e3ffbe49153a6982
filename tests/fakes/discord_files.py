"""Discord's CDN in the fake: attachments at signed URLs that expire, and the files the bot
uploads.

An attachment's URL is ``<origin>/attachments/<channel>/<attachment>/<name>`` with Discord's
query: ``ex`` (expiry, hexadecimal Unix seconds), ``is`` (issued) and ``hm`` (signature).
The CDN (:meth:`FakeCdn.serve`) answers 200 with the bytes only while ``ex`` is in the
future and ``hm`` is the file's current signature, 404 otherwise, as Discord's does; every
request is kept in :attr:`FakeCdn.hits` with the ``Authorization`` header it carried.
Fetching the message again (``GET /channels/<c>/messages/<m>``) hands out the current
signature, renewed first when it has expired (:meth:`FakeCdn.renew`), which is how a client
refreshes an attachment's URL.

Variants for tests: ``expired`` (issued with ``ex`` in the past), :meth:`FakeCdn.revoke`
(the CDN stops honouring a URL still within its ``ex``), ``host`` (the URL names another
host: ``localhost`` reaches this same server under a different origin, so a fetch would
show in :attr:`FakeCdn.hits`), ``redirect_to`` (the CDN answers 302 there), ``size`` (a
stated size other than the bytes'). A message the bot posts with files gets them as
attachments served here too (:meth:`FakeCdn.uploaded`).
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from aiohttp import web

from tests.fakes.discord_payloads import JSON

#: How long a signed URL lasts (Discord's are about a day).
URL_LIFETIME_S = 24 * 3600
#: The most a bot may upload per message, by guild boost level (discord.py's figures), and
#: in a DM (None).
UPLOAD_LIMITS = {None: 10 * 2**20, 0: 10 * 2**20, 1: 10 * 2**20, 2: 50 * 2**20, 3: 100 * 2**20}


#: A message's flag that makes it a voice message (1 << 13, IS_VOICE_MESSAGE).
VOICE_MESSAGE_FLAG = 1 << 13


@dataclass(slots=True, kw_only=True)
class CdnFile:
    attachment_id: str
    channel_id: str
    name: str
    data: bytes
    content_type: str
    size: int
    issued: int
    expires: int
    generation: int = 0  # bumped by a revocation: the signature changes
    host: str | None = None
    redirect_to: str | None = None

    @property
    def signature(self) -> str:
        text = f"{self.attachment_id}:{self.expires}:{self.generation}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True, kw_only=True)
class CdnHit:
    """One request the CDN received."""

    attachment_id: str
    host: str
    authorization: str | None
    status: int


class FakeCdn:
    """The fake's file store and CDN route; ``origin`` is the fake's ``http://127.0.0.1:PORT``."""

    def __init__(self, origin: Callable[[], str], new_id: Callable[[], str]) -> None:
        self._origin = origin
        self._new_id = new_id
        self.files: dict[str, CdnFile] = {}
        self.hits: list[CdnHit] = []

    def attachment(
        self,
        channel_id: str,
        name: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        expired: bool = False,
        host: str | None = None,
        redirect_to: str | None = None,
        size: int | None = None,
    ) -> JSON:
        """A file someone attached in ``channel_id``: its attachment object for a message."""
        now = int(time.time())
        issued = now - URL_LIFETIME_S - 60 if expired else now
        item = CdnFile(
            attachment_id=self._new_id(),
            channel_id=channel_id,
            name=name,
            data=data,
            content_type=content_type,
            size=len(data) if size is None else size,
            issued=issued,
            expires=issued + URL_LIFETIME_S,
            host=host,
            redirect_to=redirect_to,
        )
        self.files[item.attachment_id] = item
        return self.payload(item)

    def voice_message(self, channel_id: str, data: bytes, *, duration_secs: float) -> JSON:
        """The one attachment of a voice message (its message has the IS_VOICE_MESSAGE flag,
        :data:`VOICE_MESSAGE_FLAG`): an OGG/Opus file with its length and waveform, as
        Discord sends them (the waveform: base64 of at most 256 one-byte samples)."""
        item = self.attachment(channel_id, "voice-message.ogg", data, content_type="audio/ogg")
        waveform = base64.b64encode(bytes(range(0, 256, 4))).decode("ascii")
        return item | {"duration_secs": duration_secs, "waveform": waveform, "flags": 0}

    def uploaded(self, channel_id: str, files: Mapping[str, bytes]) -> list[JSON]:
        """The attachment objects of a message the bot posted with ``files``."""
        return [self.attachment(channel_id, name, data) for name, data in files.items()]

    def url(self, item: CdnFile) -> str:
        origin = self._origin()
        if item.host is not None:
            origin = f"http://{item.host}:{origin.rsplit(':', 1)[1]}"
        path = f"/attachments/{item.channel_id}/{item.attachment_id}/{quote(item.name)}"
        return f"{origin}{path}?ex={item.expires:x}&is={item.issued:x}&hm={item.signature}&"

    def payload(self, item: CdnFile) -> JSON:
        url = self.url(item)
        return {
            "id": item.attachment_id,
            "filename": item.name,
            "size": item.size,
            "content_type": item.content_type,
            "url": url,
            "proxy_url": url,
        }

    def revoke(self, attachment_id: str) -> None:
        """The CDN stops honouring the URL handed out so far (a fetched message gets a new one)."""
        self.files[attachment_id].generation += 1

    def renew(self, message: JSON) -> JSON:
        """``message`` as a fetch returns it: its attachments at their current URLs, an
        expired one signed anew."""
        now = int(time.time())
        renewed = []
        for shown in message.get("attachments") or []:
            item = self.files.get(str(shown["id"]))
            if item is None:
                renewed.append(shown)
                continue
            if item.expires <= now:
                item.issued, item.expires = now, now + URL_LIFETIME_S
            renewed.append({**shown, **self.payload(item)})
        message["attachments"] = renewed
        return message

    async def serve(self, request: web.Request) -> web.StreamResponse:
        item = self.files.get(request.match_info["attachment"])
        status = self._status(item, request)
        self.hits.append(
            CdnHit(
                attachment_id=request.match_info["attachment"],
                host=request.host,
                authorization=request.headers.get("Authorization"),
                status=status,
            )
        )
        if item is None or status == 404:
            return web.Response(status=404, text="This content is no longer available.")
        if status == 302 and item.redirect_to is not None:
            raise web.HTTPFound(item.redirect_to)
        return web.Response(body=item.data, headers={"Content-Type": item.content_type})

    @staticmethod
    def _status(item: CdnFile | None, request: web.Request) -> int:
        if item is None or request.match_info["channel"] != item.channel_id:
            return 404
        try:
            expires = int(request.query.get("ex", ""), 16)
        except ValueError:
            return 404
        if expires != item.expires or expires <= time.time():
            return 404
        if request.query.get("hm") != item.signature:
            return 404
        return 302 if item.redirect_to is not None else 200
