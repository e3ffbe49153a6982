"""The ``web_search`` tool: ask the configured search backend, return titles, URLs, snippets.

Offered only when ``tools.web_search.backend`` names one (:mod:`.search_backends`). Policy
defaults: read-only, no approval. The query is checked (not empty, at most
``max_query_chars``) and scrubbed of secrets before it leaves (:func:`bot.scrub.scrub_text`);
the progress line shows it the same way (its ``query`` argument). The request goes only to
``tools.web_search.url``, which the network guard does not vet (a self-hosted instance is
often on loopback or the LAN); redirects are not followed and proxy variables are ignored.
The answer is read with ``timeout_s`` for the whole search and at most ``max_bytes``,
counted while it streams in (a longer body is abandoned, never held), uncompressed.

The results are written by the sites and the service, so they reach the model inside one
untrusted-data block (:func:`bot.untrusted.untrusted`), after the line this tool writes
itself. The tool never fetches a result: ``http_fetch`` does, under its own network guard
and approval policy. Every failure is one :class:`~.search_backends.SearchBackendError`
line for the model; the operator's fix is logged with ``web_search_failed``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import aiohttp
import structlog
from pydantic import Field

from bot.config.tools import WebSearchToolConfig
from bot.scrub import scrub_text_noting
from bot.tools.builtin.arguments import ToolArguments, parse_arguments, schema_of
from bot.tools.builtin.observation import ToolFailed, bounded_text
from bot.tools.builtin.search_backends import (
    SearchAnswer,
    SearchBackend,
    SearchBackendError,
    SearchHit,
)
from bot.tools.spec import ToolContext, ToolKind, ToolResult, ToolSpec
from bot.untrusted import untrusted

log = structlog.get_logger(__name__)

USER_AGENT = "hatchway-web-search/1"
CHUNK = 65536


class WebSearchArguments(ToolArguments):
    query: str = Field(description="What to search for: a few key words, as in a search box.")
    count: int | None = Field(
        default=None, ge=1, le=20, description="How many results (default: the configured most)."
    )


async def _read_capped(response: aiohttp.ClientResponse, limit: int, label: str) -> bytes:
    too_big = SearchBackendError(
        f"{label}'s answer is larger than {limit} bytes (tools.web_search.max_bytes) and was "
        "not read",
        fix="raise tools.web_search.max_bytes if the backend's answers are that large",
    )
    if (response.content_length or 0) > limit:
        raise too_big
    data = bytearray()
    while chunk := await response.content.read(CHUNK):
        data += chunk
        if len(data) > limit:
            raise too_big
    return bytes(data)


async def ask(
    backend: SearchBackend, query: str, count: int, cfg: WebSearchToolConfig
) -> list[SearchHit]:
    """Send ``query`` (already checked and scrubbed) to ``backend`` and read its hits;
    raises :class:`SearchBackendError` for every way this can fail."""
    request = backend.request(query, count)
    headers = {
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",
        **request.headers,
    }
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=cfg.timeout_s)
    label = backend.label
    try:
        async with (
            asyncio.timeout(cfg.timeout_s),
            aiohttp.ClientSession(timeout=timeout, trust_env=False, auto_decompress=False) as s,
            s.get(
                request.url, params=dict(request.params), headers=headers, allow_redirects=False
            ) as response,
        ):
            encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise SearchBackendError(
                    f"{label} answered {encoding}-compressed data after being asked for "
                    "uncompressed data; it is not unpacked",
                    fix="check tools.web_search.url (a proxy in front of it may compress)",
                )
            body = await _read_capped(response, cfg.max_bytes, label)
            answer = SearchAnswer(
                status=response.status,
                headers={k.lower(): v for k, v in response.headers.items()},
                body=body,
            )
    except TimeoutError:
        raise SearchBackendError(
            f"{label} did not answer within {cfg.timeout_s:g} s",
            fix="check that the backend is up, or raise tools.web_search.timeout_s",
        ) from None
    except aiohttp.ClientError as exc:
        raise SearchBackendError(
            f"{label} cannot be reached: {type(exc).__name__}",
            fix=f"check tools.web_search.url ({cfg.base_url}) and that the service is up",
        ) from None
    return backend.read(answer, count)


def render(hits: list[SearchHit], *, label: str, query: str, masked: bool, limit: int) -> str:
    """The observation: one line of ours, then the hits as one untrusted-data block cut to
    about ``limit`` characters (whole hits dropped from the end, never the marks)."""
    head = f'{len(hits)} result{"s" if len(hits) != 1 else ""} from {label} for "{query}"'
    if masked:
        head += "\n[a secret-looking part of the query was masked before it was sent]"
    if not hits:
        return head
    source = f"web search results from {label}"
    items = [f"{n}. {h.title}\n   {h.url}\n   {h.snippet}".rstrip() for n, h in enumerate(hits, 1)]
    while True:
        shown = f"{head}\n\n{untrusted(source, chr(10).join(items))}"
        if len(shown) <= limit or len(items) == 1:
            return shown if len(shown) <= limit else bounded_text(shown, limit)
        items.pop()


def web_search_tool(cfg: WebSearchToolConfig, backend: SearchBackend) -> ToolSpec:
    """Build ``web_search`` over ``backend``."""

    async def handler(arguments: Mapping[str, object], context: ToolContext) -> ToolResult:
        args = parse_arguments(WebSearchArguments, arguments)
        query = " ".join(args.query.split())
        if not query:
            raise ToolFailed("the query is empty: give a few key words to search for")
        if len(query) > cfg.max_query_chars:
            raise ToolFailed(
                f"the query is {len(query)} characters long; a search takes at most "
                f"{cfg.max_query_chars}: ask with a few key words instead"
            )
        sent, masked = scrub_text_noting(query)
        count = min(args.count or cfg.max_results, cfg.max_results)
        started = time.monotonic()
        try:
            hits = await ask(backend, sent, count, cfg)
        except SearchBackendError as exc:
            log.warning("web_search_failed", backend=backend.label, error=str(exc), fix=exc.fix)
            raise
        log.info(
            "web_search_finished",
            backend=backend.label,
            results=len(hits),
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        return render(
            hits, label=backend.label, query=sent, masked=masked, limit=cfg.max_output_chars
        )

    return ToolSpec(
        name="web_search",
        description=(
            "Search the web and return the best results: title, URL and a snippet each, "
            "marked as data from the search. Read a result's page with http_fetch."
        ),
        parameters=schema_of(WebSearchArguments),
        handler=handler,
        requires_approval=False,
        kind=ToolKind.READ_ONLY,
        concurrency_safe=True,
        timeout_s=cfg.timeout_s + 5.0,
    )
