"""Where a Slack file may be fetched from, and what an attachment's ``ref`` holds.

A shared file's event names its ``url_private_download`` on ``files.slack.com``; fetching it
with the bot token redirects, to Slack's own hosts (``files-origin.slack.com``, the CDN on
``slack-edge.com``, ``slack-files.com``). The hosts allowed are judged against the configured
``api_base_url``, so the policy follows a Slack that is not ``slack.com`` (GovSlack, a test
fake) without a list to keep in step:

- the scheme is the API's (``https`` in production; ``http`` only when the API itself is
  reached over ``http``, as a loopback fake is), the port is the API's, and no credentials
  are written into the URL;
- the host is the API host's domain or one of its subdomains (``slack.com`` for
  ``https://slack.com/api/`` and for an Enterprise Grid host such as
  ``acme.enterprise.slack.com``), or, for ``slack.com``, ``slack-edge.com``,
  ``slack-files.com`` and their subdomains. An IP address or a single-label host (a fake on
  loopback) allows exactly that host.

The token goes only to the origin of the first URL (:func:`same_origin`); a redirect to
another allowed host is followed without it. Pure functions: nothing here does I/O.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

#: Slack's own file hosts beside the API's domain, when that domain is ``slack.com``.
SLACK_COM_FILE_DOMAINS = ("slack-edge.com", "slack-files.com")
_DEFAULT_PORTS = {"https": 443, "http": 80}


def _split(url: str) -> tuple[SplitResult, str, int] | None:
    """The parts of ``url``, its lower-case host and its effective port; None when it is
    not a plain http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host or parts.scheme not in _DEFAULT_PORTS:
        return None
    return parts, host, port


def _domain(host: str) -> str:
    """The registrable domain of a host name (its last two labels), or the host itself when
    it is an IP address or has a single label."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        labels = host.split(".")
        return ".".join(labels[-2:])
    return host


@dataclass(frozen=True, slots=True, kw_only=True)
class FileHosts:
    """The hosts a file download may touch, derived from ``api_base_url``."""

    scheme: str
    port: int
    domains: tuple[str, ...]

    @classmethod
    def for_api(cls, api_base_url: str) -> FileHosts:
        split = _split(api_base_url)
        if split is None:
            return cls(scheme="https", port=443, domains=())
        parts, host, port = split
        domain = _domain(host)
        extra = SLACK_COM_FILE_DOMAINS if domain == "slack.com" else ()
        return cls(scheme=parts.scheme, port=port, domains=(domain, *extra))

    def allows(self, url: str) -> bool:
        """Whether ``url`` is on one of Slack's file hosts (see the module docstring)."""
        split = _split(url)
        if split is None:
            return False
        parts, host, port = split
        if parts.scheme != self.scheme or port != self.port:
            return False
        if parts.username is not None or parts.password is not None:
            return False
        return any(host == d or host.endswith(f".{d}") for d in self.domains)


def same_origin(url: str, first: str) -> bool:
    """Whether ``url`` has the scheme, host and port of ``first``: only then does a request
    to it carry the bot token."""
    a, b = _split(url), _split(first)
    if a is None or b is None:
        return False
    return (a[0].scheme, a[1], a[2]) == (b[0].scheme, b[1], b[2])


def host_of(url: str) -> str:
    """The host of ``url`` for a log line (never the path or the query: a signed URL's
    query is a credential)."""
    split = _split(url)
    return split[1] if split is not None else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRef:
    """What an :class:`~bot.envelope.Attachment`'s ``ref`` holds for a Slack file: its id
    and the URL to fetch it from (``url_private_download``, else ``url_private``; empty
    when the event did not give one, as with ``file_access: check_file_info``, and then
    ``files.info`` is asked)."""

    file_id: str
    url: str = ""

    def encode(self) -> str:
        return json.dumps({"id": self.file_id, "url": self.url}, separators=(",", ":"))

    @classmethod
    def decode(cls, ref: str) -> FileRef:
        """The ref of an attachment; an older envelope's ref is a bare URL or file id."""
        try:
            data = json.loads(ref)
        except ValueError:
            data = None
        if isinstance(data, dict):
            return cls(file_id=str(data.get("id") or ""), url=str(data.get("url") or ""))
        if ref.startswith(("https://", "http://")):
            return cls(file_id="", url=ref)
        return cls(file_id=ref)
