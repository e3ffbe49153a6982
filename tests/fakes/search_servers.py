"""Loopback fakes of the search services ``web_search`` talks to: SearXNG and Brave Search.

Each answers as its documentation says, including the refusals:

- :class:`FakeSearxng` (docs.searxng.org, "Search API" and "search:" settings): ``GET``/``POST``
  ``/search`` (and ``/``) with ``q`` and ``format``; a format missing from
  :attr:`~FakeSearxng.formats` (``search.formats``; SearXNG's own default is ``[html]``) is
  ``403 Forbidden`` as an HTML page; a missing ``q`` in JSON is ``400 {"error": "No
  query"}``. With :attr:`~FakeSearxng.limiter` on (``server.limiter``), a client whose address
  is not in :attr:`~FakeSearxng.pass_ip` is probed as the bot detection does (``Accept``
  must contain ``text/html``, ``Accept-Language`` must be set, ``Accept-Encoding`` must hold
  gzip and deflate, the User-Agent must not look like a bot) and a failed probe is ``429 Too
  Many Requests``. A JSON answer has the documented keys (``query``, ``number_of_results``,
  ``results`` with ``url``/``title``/``content``/``engine``…, ``answers``, ``suggestions``…).
- :class:`FakeBrave` (api-dashboard.search.brave.com, "Web search" reference, response
  headers): ``GET /res/v1/web/search`` with ``X-Subscription-Token``; errors are
  ``{"type": "ErrorResponse", "error": {"id", "status", "code", "detail", "meta"}}``: no token
  is 422 ``VALIDATION`` (the header named in ``meta.errors``), an unknown token 422
  ``SUBSCRIPTION_TOKEN_INVALID``, an empty query, one over 400 characters or 50 words, a
  ``count`` outside 1–20 are 422 ``VALIDATION``, and more than :attr:`~FakeBrave.per_second`
  requests are 429 ``RATE_LIMITED``; every answer carries the ``X-RateLimit-*`` headers.

Both can misbehave on request (:attr:`SearchFake.misbehave`): ``"hang"`` never answers,
``"html"`` answers 200 with a web page, ``"huge"`` streams a 10 MB JSON body.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse

from aiohttp import web

from tests.fakes.loopback import LoopbackFake, LoopbackServer

Misbehaviour = Literal["hang", "html", "huge"] | None
HUGE_BYTES = 10 * 1024 * 1024
HTML_PAGE = "<!doctype html><html><head><title>Search</title></head><body>hi</body></html>"


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str


@dataclass
class Asked:
    """One request the fake received: its query parameters and headers."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]
    remote: str = ""


DEFAULT_HITS = (
    Hit("hatchway - chat bot daemon", "https://example.org/hatchway", "A bot for teams."),
    Hit("Release notes", "https://example.org/hatchway/releases", "Version 2: faster builds."),
    Hit("Issue tracker", "https://example.com/issues", "Report bugs here."),
)


class SearchFake(LoopbackFake):
    """The shared part: a loopback server, the hits to give, the requests seen."""

    def __init__(self) -> None:
        self.hits: list[Hit] = list(DEFAULT_HITS)
        self.asked: list[Asked] = []
        self.misbehave: Misbehaviour = None
        self._server = LoopbackServer(handler_cancellation=True, shutdown_timeout=0.5)

    @property
    def base_url(self) -> str:
        return self._server.origin

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    def app(self) -> web.Application:
        app = web.Application()
        self.routes(app)
        return app

    async def record(self, request: web.Request) -> Asked:
        params = dict(request.query)
        if request.method == "POST":
            params.update({k: str(v) for k, v in (await request.post()).items()})
        asked = Asked(
            path=request.path,
            params=params,
            headers=dict(request.headers),
            remote=request.remote or "",
        )
        self.asked.append(asked)
        return asked

    async def misbehaviour(self, request: web.Request) -> web.StreamResponse | None:
        """The answer :attr:`misbehave` asks for, or None to answer normally."""
        if self.misbehave == "hang":
            await asyncio.Event().wait()
        if self.misbehave == "html":
            return web.Response(text=HTML_PAGE, content_type="text/html")
        if self.misbehave == "huge":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write(b'{"results": [')
            block = b'{"url": "https://example.org/", "title": "x", "content": "' + b"y" * 65000
            block += b'"},'
            for _ in range(HUGE_BYTES // len(block) + 1):
                await response.write(block)
            await response.write(b"{}]}")
            await response.write_eof()
            return response
        return None


class FakeSearxng(SearchFake):
    """A SearXNG instance (see the module docstring)."""

    def __init__(
        self,
        *,
        formats: tuple[str, ...] = ("html", "json"),
        limiter: bool = False,
        pass_ip: tuple[str, ...] = (),
    ) -> None:
        super().__init__()
        self.formats = formats
        self.limiter = limiter
        self.pass_ip = pass_ip

    def routes(self, app: web.Application) -> None:
        for path in ("/", "/search"):
            app.router.add_route("GET", path, self._search)
            app.router.add_route("POST", path, self._search)

    def _bot_probe(self, asked: Asked) -> str | None:
        """Why the bot detection blocks ``asked``, or None (searx/botdetection/http_*.py)."""
        headers = {k.lower(): v for k, v in asked.headers.items()}
        if "text/html" not in headers.get("accept", ""):
            return "HTTP header Accept did not contain text/html"
        if not headers.get("accept-language"):
            return "missing HTTP header Accept-Language"
        encodings = [e.strip() for e in headers.get("accept-encoding", "").split(",")]
        if "gzip" not in encodings or "deflate" not in encodings:
            return "suspicious Accept-Encoding"
        agent = headers.get("user-agent", "").lower()
        if not agent or any(b in agent for b in ("curl", "wget", "python", "bot", "hatchway")):
            return "bot detected, HTTP header User-Agent"
        return None

    async def _search(self, request: web.Request) -> web.StreamResponse:
        asked = await self.record(request)
        if self.limiter and asked.remote not in self.pass_ip and self._bot_probe(asked):
            return web.Response(status=429, text="Too Many Requests")
        output = asked.params.get("format", "html")
        if output not in ("html", "json", "csv", "rss"):
            output = "html"
        if output not in self.formats:
            return web.Response(
                status=403,
                text="<!doctype html><title>403 Forbidden</title><h1>Forbidden</h1>",
                content_type="text/html",
            )
        weird = await self.misbehaviour(request)
        if weird is not None:
            return weird
        query = asked.params.get("q", "")
        if not query:
            if output == "html":
                return web.Response(text=HTML_PAGE, content_type="text/html")
            return web.json_response({"error": "No query"}, status=400)
        if output != "json":
            return web.Response(text=HTML_PAGE, content_type="text/html")
        results = [
            {
                "url": hit.url,
                "title": hit.title,
                "content": hit.snippet,
                "engine": "duckduckgo",
                "parsed_url": list(urlparse(hit.url)),
                "template": "default.html",
                "engines": ["duckduckgo"],
                "positions": [n],
                "score": 1.0 / n,
                "category": "general",
            }
            for n, hit in enumerate(self.hits, 1)
        ]
        return web.json_response(
            {
                "query": query,
                "number_of_results": 0,
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )


class FakeBrave(SearchFake):
    """The Brave Search web search API (see the module docstring). ``per_second`` is the
    plan's request rate; the fake counts requests and refuses past it, without a clock
    (:meth:`next_second` starts a new second)."""

    def __init__(self, token: str, *, per_second: int = 1000, monthly: int = 2000) -> None:
        super().__init__()
        self.token = token
        self.per_second = per_second
        self.monthly = monthly
        self.used = 0
        self._this_second = 0

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/res/v1/web/search", self._search)

    def next_second(self) -> None:
        self._this_second = 0

    def _limit_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": f"{self.per_second}, {self.monthly}",
            "X-RateLimit-Policy": f"{self.per_second};w=1, {self.monthly};w=2592000",
            "X-RateLimit-Remaining": (
                f"{max(self.per_second - self._this_second, 0)}, {max(self.monthly - self.used, 0)}"
            ),
            "X-RateLimit-Reset": "1, 1419704",
        }

    def _error(
        self, status: int, code: str, detail: str, meta: dict[str, Any] | None = None
    ) -> web.Response:
        body = {
            "type": "ErrorResponse",
            "error": {
                "id": str(uuid.uuid4()),
                "status": status,
                "code": code,
                "detail": detail,
                "meta": meta or {},
            },
            "time": 1754364294,
        }
        return web.Response(
            status=status,
            text=json.dumps(body),
            content_type="application/json",
            headers=self._limit_headers(),
        )

    def _invalid(self, where: list[str], message: str, value: object) -> web.Response:
        meta = {"errors": [{"input": value, "loc": where, "msg": message, "type": "value_error"}]}
        return self._error(422, "VALIDATION", "Unable to validate request parameter(s)", meta)

    async def _search(self, request: web.Request) -> web.StreamResponse:
        asked = await self.record(request)
        token = request.headers.get("X-Subscription-Token")
        if token is None:
            meta: dict[str, Any] = {
                "errors": [
                    {
                        "input": None,
                        "loc": ["header", "x-subscription-token"],
                        "msg": "Field required",
                        "type": "missing",
                    }
                ]
            }
            return self._error(422, "VALIDATION", "Unable to validate request parameter(s)", meta)
        if token != self.token:
            return self._error(
                422,
                "SUBSCRIPTION_TOKEN_INVALID",
                "The provided subscription token is invalid.",
            )
        self._this_second += 1
        if self._this_second > self.per_second:
            meta = {
                "plan": "Free",
                "rate_limit": self.per_second,
                "rate_current": self._this_second,
                "quota_limit": self.monthly,
                "quota_current": self.used,
                "component": "rate_limiter",
            }
            return self._error(429, "RATE_LIMITED", "Request rate limit exceeded for plan.", meta)
        query = asked.params.get("q", "")
        if not query.strip():
            return self._invalid(["query", "q"], "Query can not be empty", query)
        if len(query) > 400 or len(query.split()) > 50:
            return self._invalid(["query", "q"], "Query is too long", query)
        raw_count = asked.params.get("count", "20")
        if not raw_count.isdigit() or not 1 <= int(raw_count) <= 20:
            return self._invalid(["query", "count"], "count must be within 1 and 20", raw_count)
        weird = await self.misbehaviour(request)
        if weird is not None:
            return weird
        self.used += 1
        results = [
            {
                "type": "search_result",
                "title": hit.title,
                "url": hit.url,
                "description": hit.snippet,
                "is_source_local": False,
                "is_source_both": False,
                "family_friendly": True,
                "profile": {"name": urlparse(hit.url).netloc, "url": hit.url},
                "meta_url": {"scheme": "https", "hostname": urlparse(hit.url).netloc},
            }
            for hit in self.hits[: int(raw_count)]
        ]
        body = {
            "type": "search",
            "query": {"original": query, "more_results_available": False},
            "mixed": {"type": "mixed", "main": [], "top": [], "side": []},
            "web": {"type": "search", "results": results, "family_friendly": True},
        }
        return web.Response(
            text=json.dumps(body), content_type="application/json", headers=self._limit_headers()
        )
