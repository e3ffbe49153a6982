"""The ``http_fetch`` tool: GET or POST a URL and return its text.

Policy defaults: a GET needs no approval (``approval_check`` says so per call), a POST does;
both are bounded by ``tools.http_fetch.timeout_s`` (the whole fetch, redirects included) and
``max_bytes`` (the body is read up to it, then cut). Redirects are followed by hand, at most
:data:`MAX_REDIRECTS`, and every hop passes the :class:`NetworkGuard` and is pinned to its
vetted addresses. Proxy variables in the environment are ignored on purpose (a proxy would
bypass the guard). HTML is reduced to text; other text types are returned as they are; binary
bodies are described, not shown. An answer with a status of 400 or more is returned with its
text like any other, and marked as a failed call (:class:`~bot.tools.spec.ToolFailure`); a
transport error or a timeout raises. A page's text is written by whoever runs the site, so it
reaches the model marked as untrusted data (:func:`bot.untrusted.untrusted`, named by the URL
without its credentials, query or fragment) after the lines this tool writes itself.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import aiohttp
import structlog
from pydantic import Field
from yarl import URL

from bot.config import HttpFetchToolConfig
from bot.scrub import scrub_text
from bot.tools.builtin import fetch_preview
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.network_guard import HostResolver, NetworkGuard, PinnedResolver
from bot.tools.builtin.observation import ToolFailed, ToolRefused, bounded_text
from bot.tools.spec import (
    CallPreview,
    FailureKind,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolOutput,
    ToolResult,
    ToolSpec,
)
from bot.untrusted import untrusted

log = structlog.get_logger(__name__)

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
FAILED_STATUS = 400  # an answer with this status or more is a failed call (shown as one)
FORBIDDEN_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
    }
)
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
USER_AGENT = "hatchway-http-fetch/1"


class HttpFetchArguments(ToolArguments):
    url: str = Field(min_length=1, max_length=4000, description="Absolute http(s) URL.")
    method: Literal["GET", "POST"] = Field(default="GET", description="GET (default) or POST.")
    body: str | None = Field(default=None, max_length=1_000_000, description="POST body.")
    content_type: str | None = Field(
        default=None, description="POST body type; default: JSON when the body parses as JSON."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, max_length=20, description="Extra request headers."
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


def needs_approval(arguments: Mapping[str, object], context: ToolContext) -> bool:
    """Per-call approval: anything but a GET (a POST can change things elsewhere)."""
    return str(arguments.get("method", "GET")).upper() != "GET"


def request_headers(args: HttpFetchArguments) -> dict[str, str]:
    """The headers a fetch sends: the tool's own and the call's; ``ToolFailed`` for a header
    a call may not set."""
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, application/json, text/*;q=0.9"}
    for name, value in args.headers.items():
        if name.lower() in FORBIDDEN_HEADERS or "\n" in value or "\r" in value:
            raise ToolFailed(f"header {name!r} cannot be set")
        headers[name] = value
    if args.method == "POST" and args.body is not None:
        content_type = args.content_type
        if content_type is None:
            try:
                json.loads(args.body)
                content_type = "application/json"
            except ValueError:
                content_type = "text/plain; charset=utf-8"
        headers["Content-Type"] = content_type
    return headers


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


async def fetch(args: HttpFetchArguments, cfg: HttpFetchToolConfig, guard: NetworkGuard) -> Page:
    """Perform the request, following up to :data:`MAX_REDIRECTS` redirects, each hop vetted
    and pinned. Raises :class:`ToolRefused` / :class:`ToolFailed`."""
    url = URL(args.url)
    if url.scheme not in ("http", "https"):
        raise ToolRefused(f"only http and https URLs can be fetched, not {url.scheme!r}")
    if not url.is_absolute():
        raise ToolFailed(f"{args.url!r} is not an absolute URL")
    method: str = args.method
    body = args.body if args.method == "POST" else None
    headers = request_headers(args)
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


def http_fetch_tool(cfg: HttpFetchToolConfig, *, resolver: HostResolver | None = None) -> ToolSpec:
    """Build ``http_fetch``. ``resolver`` replaces the system DNS lookup (tests)."""
    guard = (
        NetworkGuard(cfg.allow_hosts)
        if resolver is None
        else NetworkGuard(cfg.allow_hosts, resolver=resolver)
    )

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(HttpFetchArguments, arguments)
        page = await fetch(args, cfg, guard)
        failure = (
            ToolFailure(kind=FailureKind.HTTP_STATUS, code=page.status)
            if page.status >= FAILED_STATUS
            else None
        )
        return ToolOutput(text=page.shown(cfg.max_output_chars), failure=failure)

    async def preview(arguments: Mapping[str, object], context: ToolContext) -> CallPreview:
        """The request as it will be sent, for the card (:mod:`fetch_preview`); a header
        the tool refuses refuses the call before any card."""
        try:
            args = parse_arguments(HttpFetchArguments, arguments)
            headers = request_headers(args)
        except ToolFailed as exc:
            return CallPreview(refusal=str(exc))
        return await fetch_preview.preview(args.method, headers, args.body)

    return ToolSpec(
        name="http_fetch",
        description=(
            "Fetch a public http(s) URL (GET, or POST with a body) and return the status and "
            "the body as text (HTML reduced to readable text), marked as data from the site. "
            "Internal and private addresses are refused."
        ),
        parameters=schema_of(HttpFetchArguments),
        handler=handler,
        requires_approval=True,
        approval_check=needs_approval,
        approval_preview=preview,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        timeout_s=cfg.timeout_s + 5.0,
    )
