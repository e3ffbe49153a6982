"""The ``http_fetch`` tool: GET or POST a URL and return its text.

Policy defaults: a GET needs no approval (``approval_check`` says so per call), a POST does;
both are bounded by ``tools.http_fetch.timeout_s`` (the whole fetch, redirects included) and
``max_bytes`` (the body is read up to it, then cut). Redirects are followed by hand, at most
:data:`~bot.tools.builtin.page_fetch.MAX_REDIRECTS`, and every hop passes the
:class:`NetworkGuard` and is pinned to its vetted addresses (:mod:`page_fetch`, imported
with aiohttp at the first fetch). Proxy variables in the environment are ignored on purpose
(a proxy would bypass the guard). HTML is reduced to text; other text types are returned as
they are; binary bodies are described, not shown. An answer with a status of 400 or more is
returned with its text like any other, and marked as a failed call
(:class:`~bot.tools.spec.ToolFailure`); a transport error or a timeout raises. A page's text
is written by whoever runs the site, so it reaches the model marked as untrusted data
(:func:`bot.untrusted.untrusted`, named by the URL without its credentials, query or
fragment) after the lines this tool writes itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from bot.config import HttpFetchToolConfig
from bot.tools.builtin import fetch_preview
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.network_guard import HostResolver, NetworkGuard
from bot.tools.builtin.observation import ToolFailed
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


def http_fetch_tool(cfg: HttpFetchToolConfig, *, resolver: HostResolver | None = None) -> ToolSpec:
    """Build ``http_fetch``. ``resolver`` replaces the system DNS lookup (tests)."""
    guard = (
        NetworkGuard(cfg.allow_hosts)
        if resolver is None
        else NetworkGuard(cfg.allow_hosts, resolver=resolver)
    )

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(HttpFetchArguments, arguments)
        # aiohttp with it, at the first fetch: a process that never fetches has no use for it
        from bot.tools.builtin.page_fetch import fetch

        page = await fetch(
            args.url,
            method=args.method,
            body=args.body if args.method == "POST" else None,
            headers=request_headers(args),
            cfg=cfg,
            guard=guard,
        )
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
