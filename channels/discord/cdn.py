"""Where a Discord attachment lives: its reference, its signed URL, and the hosts it may be
fetched from.

An attachment's URL is signed and expires: Discord appends ``ex`` (the expiry, hexadecimal
Unix seconds), ``is`` (when it was issued) and ``hm`` (the signature), and its CDN answers
404 once the URL has expired. :class:`AttachmentRef` keeps, besides the URL, the ids that
find the attachment again (channel, message, attachment), so a URL that has expired can be
renewed by fetching the message anew (:mod:`channels.discord.downloads`). It travels as the
envelope's opaque ``Attachment.ref`` (:meth:`AttachmentRef.encode`), small and readable; a
ref written before it carried ids (a bare URL) still reads, without the means to renew it.

:class:`CdnHosts` is the one check every URL passes before anything is fetched from it, the
attachment's own and each redirect's: Discord's CDN hosts over https
(:data:`DISCORD_CDN_HOSTS`), and the origin of the configured ``api_base_url`` (where a
loopback fake in tests, or an operator's proxy, serves the CDN as well). No other address,
whatever a message says, is ever fetched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import yarl

#: The hosts Discord serves attachments from (``url`` and ``proxy_url``), over https only.
DISCORD_CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})

_REF_PREFIX = "discord:"


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachmentRef:
    """One attachment of one message: the ids that find it again and its URL as last seen.
    Ids are decimal strings; empty when unknown (an old ref)."""

    channel_id: str = ""
    message_id: str = ""
    attachment_id: str = ""
    url: str

    @property
    def renewable(self) -> bool:
        """Whether the message can be fetched again for a fresh URL."""
        return all(i.isdigit() for i in (self.channel_id, self.message_id, self.attachment_id))

    def encode(self) -> str:
        """``discord:<channel>/<message>/<attachment> <url>`` (a URL holds no space)."""
        return f"{_REF_PREFIX}{self.channel_id}/{self.message_id}/{self.attachment_id} {self.url}"

    @classmethod
    def decode(cls, ref: str) -> AttachmentRef:
        """The reverse of :meth:`encode`; anything else is taken as a bare URL."""
        if ref.startswith(_REF_PREFIX) and " " in ref:
            ids, url = ref[len(_REF_PREFIX) :].split(" ", 1)
            parts = ids.split("/")
            if len(parts) == 3:
                channel_id, message_id, attachment_id = parts
                return cls(
                    channel_id=channel_id,
                    message_id=message_id,
                    attachment_id=attachment_id,
                    url=url,
                )
        return cls(url=ref)


def url_expired(url: str, *, now: float | None = None) -> bool:
    """True when ``url`` carries Discord's ``ex`` expiry and it has passed; a URL without
    one (or with one that does not parse) is left for the CDN to judge."""
    try:
        expires = int(yarl.URL(url).query.get("ex", ""), 16)
    except ValueError:
        return False
    return expires <= (time.time() if now is None else now)


class CdnHosts:
    """The addresses attachment downloads may go to."""

    def __init__(self, api_base_url: str | None) -> None:
        self._extra_origin: yarl.URL | None = None
        if api_base_url is not None:
            base = yarl.URL(api_base_url)
            if base.is_absolute() and base.host:
                self._extra_origin = base.origin()

    def allows(self, url: str | yarl.URL) -> bool:
        """Whether ``url`` is on Discord's CDN (https) or at the configured API's origin;
        never one naming a user or password."""
        try:
            parsed = url if isinstance(url, yarl.URL) else yarl.URL(url)
        except ValueError:
            return False
        if not parsed.is_absolute() or parsed.user is not None or parsed.password is not None:
            return False
        host = (parsed.host or "").lower()
        if parsed.scheme == "https" and parsed.port == 443 and host in DISCORD_CDN_HOSTS:
            return True
        return self._extra_origin is not None and parsed.origin() == self._extra_origin
