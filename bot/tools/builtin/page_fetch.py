"""``http_fetch``'s request over aiohttp: every hop vetted by the tool's
:class:`~bot.tools.builtin.network_guard.NetworkGuard` and pinned to the addresses it vetted
(:class:`PinnedResolver`), redirects followed by hand, the body read up to the tool's cap and
rendered as the :class:`Page` the model is shown. Imported by the tool at its first call, so
that a process that never fetches (``hatchway chat`` against a plain ``http://`` model
server) does not import aiohttp.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from bot.config import HttpFetchToolConfig
from bot.scrub import scrub_text
from bot.tools.builtin.network_guard import NetworkGuard, VettedTarget
from bot.tools.builtin.observation import ToolFailed, ToolRefused, bounded_text
from bot.untrusted import untrusted

log = structlog.get_logger(__name__)

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie"})
TEXT_TYPES = (
    "text/",
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/ld+json",
    "application/rss+xml",
    "application/atom+xml",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """What a fetch got: ``head`` the lines this tool writes (status, URL, type, notes),
    ``body`` the text the site sent (``None`` for a binary body, which is not shown) and
    ``source`` the URL it came from as the model is shown it (no credentials, no query)."""

    head: str
    body: str | None
    source: str
    status: int

    def shown(self, limit: int) -> str:
        """The observation: scrubbed, about ``limit`` characters at most, the body cut in
        its middle (never the marks around it) and marked as untrusted data."""
        head = scrub_text(self.head)
        if self.body is None:
            return bounded_text(head, limit)
        source = scrub_text(self.source)
        room = limit - len(head) - 2 - len(untrusted(source, ""))
        marked = untrusted(source, bounded_text(self.body, max(room, 0)))
        over = len(head) + 2 + len(marked) - limit
        if over > 0:  # each tag the page wrote was defused with a character more
            marked = untrusted(source, bounded_text(self.body, max(room - over, 0)))
        return f"{head}\n\n{marked}"


def shown_source(url: URL) -> str:
    """``url`` without user, password, query or fragment."""
    return str(url.with_user(None).with_query(None).with_fragment(None))


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    data = bytearray()
    while chunk := await response.content.read(65536):
        data += chunk
        if len(data) > limit:
            return bytes(data[:limit]), True
    return bytes(data), False


def _render(response: aiohttp.ClientResponse, data: bytes, truncated: bool, limit: int) -> Page:
    content_type = response.headers.get("Content-Type", "")
    mime = content_type.split(";", 1)[0].strip().lower()
    lines = [f"HTTP {response.status} {response.reason or ''}".rstrip(), f"URL: {response.url}"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    if truncated:
        lines.append(f"[body cut at {limit} bytes (tools.http_fetch.max_bytes)]")
    if mime and not mime.startswith(TEXT_TYPES) and not mime.endswith(("+json", "+xml")):
        lines.append(f"[binary body not shown: {len(data)} bytes]")
        return Page(
            head="\n".join(lines),
            body=None,
            source=shown_source(response.url),
            status=response.status,
        )
    charset = response.charset or "utf-8"
    try:
        text = data.decode(charset, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    if mime in ("text/html", "application/xhtml+xml") or (not mime and "<html" in text[:1000]):
        # at the first page: html.parser and its entity table (~0.4 MB) are no start-up's
        from bot.tools.builtin.html_text import html_to_text

        text = html_to_text(text)
    return Page(
        head="\n".join(lines), body=text, source=shown_source(response.url), status=response.status
    )


async def fetch(
    address: str,
    *,
    method: str,
    body: str | None,
    headers: dict[str, str],
    cfg: HttpFetchToolConfig,
    guard: NetworkGuard,
) -> Page:
    """Send ``method`` (with ``body`` for a POST) to ``address``, following up to
    :data:`MAX_REDIRECTS` redirects, each hop vetted and pinned. Raises
    :class:`ToolRefused` / :class:`ToolFailed`."""
    url = URL(address)
    if url.scheme not in ("http", "https"):
        raise ToolRefused(f"only http and https URLs can be fetched, not {url.scheme!r}")
    if not url.is_absolute():
        raise ToolFailed(f"{address!r} is not an absolute URL")
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=cfg.timeout_s)
    try:
        async with asyncio.timeout(cfg.timeout_s):
            for _hop in range(MAX_REDIRECTS + 1):
                target = await guard.vet(url)
                connector = aiohttp.TCPConnector(
                    resolver=PinnedResolver(target), use_dns_cache=False, force_close=True
                )
                async with (
                    aiohttp.ClientSession(
                        connector=connector, trust_env=False, timeout=timeout
                    ) as session,
                    session.request(
                        method, url, data=body, headers=headers, allow_redirects=False
                    ) as response,
                ):
                    location = response.headers.get("Location")
                    if response.status in REDIRECT_STATUSES and location:
                        next_url = url.join(URL(location))
                        log.info("http_fetch_redirect", status=response.status, host=next_url.host)
                        if response.status == 303 or (
                            response.status in (301, 302) and method == "POST"
                        ):
                            method, body = "GET", None
                            headers.pop("Content-Type", None)
                        if next_url.host != url.host:
                            headers = {
                                k: v
                                for k, v in headers.items()
                                if k.lower() not in CREDENTIAL_HEADERS
                            }
                        url = next_url
                        continue
                    data, truncated = await _read_capped(response, cfg.max_bytes)
                    return _render(response, data, truncated, cfg.max_bytes)
    except TimeoutError:
        raise ToolFailed(f"no complete answer within {cfg.timeout_s:g}s") from None
    except aiohttp.ClientError as exc:
        raise ToolFailed(f"request to {url.host} failed: {type(exc).__name__}: {exc}") from None
    raise ToolFailed(f"too many redirects (more than {MAX_REDIRECTS})")


class PinnedResolver(AbstractResolver):
    """An aiohttp resolver that answers only for one vetted host, with its vetted addresses."""

    def __init__(self, target: VettedTarget) -> None:
        self._target = target

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        if host.rstrip(".").lower() != self._target.host.rstrip(".").lower():
            raise OSError(f"{host} was not vetted for this connection")
        results: list[ResolveResult] = []
        for address in self._target.addresses:
            ip = ipaddress.ip_address(address)
            results.append(
                ResolveResult(
                    hostname=host,
                    host=address,
                    port=port,
                    family=socket.AF_INET if ip.version == 4 else socket.AF_INET6,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            )
        return results

    async def close(self) -> None:
        return None
