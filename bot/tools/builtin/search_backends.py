"""The backends of ``web_search``: what each one is asked, and how its answer is read.

A :class:`SearchBackend` turns a query into one HTTP request (:class:`SearchRequest`) and one
answer (:class:`SearchAnswer`, the status, headers and the body as read, already capped)
into at most ``count`` :class:`SearchHit` values, or raises :class:`SearchBackendError`
saying what went wrong, in words for the model, with ``fix`` for the operator (logged, and
shown by ``hatchway doctor``). Backends do no I/O: the tool's transport
(:mod:`bot.tools.builtin.web_search`) sends the request and reads the answer for all of
them, so timeouts and the read cap are the same everywhere.

- :class:`SearxngBackend`: a self-hosted SearXNG, ``GET {url}/search?q=…&format=json``.
  JSON must be listed in its ``search.formats`` (settings.yml); otherwise it answers 403.
  Its limiter (``server.limiter``) may answer 429.
- :class:`BraveBackend`: the Brave Search API, ``GET {url}/res/v1/web/search?q=…&count=N``
  with the key in ``X-Subscription-Token``. Errors are JSON ``{"type": "ErrorResponse",
  "error": {"status", "code", "detail", …}}``: ``SUBSCRIPTION_TOKEN_INVALID`` for a bad key,
  ``VALIDATION`` for a refused parameter, ``RATE_LIMITED`` (429) with ``X-RateLimit-Reset``.

::

    ToolFailed
    └── SearchBackendError   the backend refused, failed or answered something unreadable
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from bot.config.tools import WebSearchToolConfig
from bot.errors import ConfigError
from bot.tools.builtin.observation import ToolFailed

TITLE_CHARS = 300
SNIPPET_CHARS = 600
URL_CHARS = 2000
_TAG = re.compile(r"<[^>]{0,200}>")
_SPACES = re.compile(r"\s+")
_JSON_TYPES = ("application/json", "application/problem+json")


class SearchBackendError(ToolFailed):
    """The backend could not answer the search; ``fix`` says what the operator can change
    (empty when nothing in the configuration would help)."""

    def __init__(self, message: str, *, fix: str = "") -> None:
        super().__init__(message)
        self.fix = fix


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One result: plain text (markup removed, entities decoded, each field cut)."""

    title: str
    url: str
    snippet: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest:
    """A GET to ``url`` with ``params`` as its query string and ``headers``."""

    url: str
    params: Mapping[str, str]
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchAnswer:
    """What the backend sent: status, lower-cased header names, and the whole body (the
    transport refuses a body over ``tools.web_search.max_bytes`` before this is made)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def mime(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class SearchBackend(Protocol):
    """One search service. ``label`` names it to the model and in the doctor's lines."""

    @property
    def label(self) -> str: ...

    def request(self, query: str, count: int) -> SearchRequest:
        """The request for ``query``, asking for ``count`` results where the service can."""
        ...

    def read(self, answer: SearchAnswer, count: int) -> list[SearchHit]:
        """At most ``count`` hits from ``answer``; :class:`SearchBackendError` when it is an
        error, not JSON, or not the documented shape."""
        ...


def plain(value: object, limit: int) -> str:
    """A result field as one line of plain text of at most ``limit`` characters."""
    if not isinstance(value, str):
        return ""
    text = _SPACES.sub(" ", html.unescape(_TAG.sub("", value))).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def hit_of(title: object, url: object, snippet: object) -> SearchHit | None:
    """A hit, or None for a result whose URL is not an absolute http(s) URL."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    if len(url) > URL_CHARS or any(c.isspace() for c in url):
        return None
    return SearchHit(
        title=plain(title, TITLE_CHARS) or url,
        url=url,
        snippet=plain(snippet, SNIPPET_CHARS),
    )


def json_object(answer: SearchAnswer, label: str, fix: str) -> dict[str, object]:
    """The answer's body as a JSON object, or a :class:`SearchBackendError` saying what it
    is instead (HTML, other text, broken JSON)."""
    if answer.mime not in _JSON_TYPES:
        shown = answer.mime or "no content type"
        raise SearchBackendError(
            f"{label} answered {shown} (HTTP {answer.status}), not JSON", fix=fix
        )
    try:
        body = json.loads(answer.body)
    except ValueError:
        raise SearchBackendError(f"{label} answered malformed JSON", fix=fix) from None
    if not isinstance(body, dict):
        raise SearchBackendError(f"{label} answered JSON that is not an object", fix=fix)
    return body


def _redirect(answer: SearchAnswer, label: str, key: str) -> SearchBackendError:
    where = answer.headers.get("location", "elsewhere")[:200]
    return SearchBackendError(
        f"{label} answered a redirect (HTTP {answer.status}) to {where}",
        fix=f"set {key} to the address the service answers at (redirects are not followed)",
    )


class SearxngBackend:
    """A SearXNG instance at ``base_url``."""

    label = "SearXNG"

    def __init__(self, base_url: str) -> None:
        self._base = base_url.rstrip("/")

    def request(self, query: str, count: int) -> SearchRequest:
        # SearXNG has no result count: it answers a page (about 20); read() keeps `count`.
        return SearchRequest(
            url=f"{self._base}/search",
            params={"q": query, "format": "json", "pageno": "1"},
            headers={"Accept": "application/json"},
        )

    def read(self, answer: SearchAnswer, count: int) -> list[SearchHit]:
        url_key = "tools.web_search.url"
        if answer.status == 403:
            raise SearchBackendError(
                "the SearXNG instance does not answer in JSON (HTTP 403: json is not in its "
                "search.formats)",
                fix="add json to search.formats in the instance's settings.yml "
                "(formats: [html, json]) and restart it",
            )
        if answer.status == 429:
            raise SearchBackendError(
                "the SearXNG instance's limiter refused the search (HTTP 429, too many "
                "requests); try again later",
                fix="let hatchway's address pass the instance's limiter "
                "(botdetection.ip_lists.pass_ip in limiter.toml) or set server.limiter: false "
                "in its settings.yml",
            )
        if 300 <= answer.status < 400:
            raise _redirect(answer, self.label, url_key)
        if answer.status != 200:
            raise SearchBackendError(
                f"the SearXNG instance answered HTTP {answer.status}",
                fix=f"check {url_key} and the instance's log",
            )
        body = json_object(
            answer,
            "the SearXNG instance",
            f"check {url_key}: the instance's base URL, whose /search answers JSON",
        )
        results = body.get("results")
        if not isinstance(results, list):
            raise SearchBackendError(
                "the SearXNG instance's answer has no results list",
                fix=f"check {url_key}: it should name a SearXNG instance",
            )
        hits: list[SearchHit] = []
        for item in results:
            if len(hits) >= count:
                break
            if isinstance(item, dict):
                hit = hit_of(item.get("title"), item.get("url"), item.get("content"))
                if hit is not None and all(h.url != hit.url for h in hits):
                    hits.append(hit)
        return hits


class BraveBackend:
    """The Brave Search API at ``base_url`` with ``api_key`` (read from ``key_env``)."""

    label = "Brave Search"

    def __init__(self, base_url: str, *, api_key: str, key_env: str) -> None:
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._key_env = key_env

    def request(self, query: str, count: int) -> SearchRequest:
        return SearchRequest(
            url=f"{self._base}/res/v1/web/search",
            params={"q": query, "count": str(count)},
            headers={"Accept": "application/json", "X-Subscription-Token": self._key},
        )

    def read(self, answer: SearchAnswer, count: int) -> list[SearchHit]:
        key_fix = (
            f"put a valid Brave Search API key into {self._key_env} (tools.web_search.api_key_env)"
        )
        if 300 <= answer.status < 400:
            raise _redirect(answer, self.label, "tools.web_search.url")
        if answer.status != 200:
            code, detail = self._error(answer)
            if answer.status in (401, 403) or code == "SUBSCRIPTION_TOKEN_INVALID":
                raise SearchBackendError(
                    f"Brave Search refused the API key (HTTP {answer.status}"
                    f"{', ' + code if code else ''})",
                    fix=key_fix,
                )
            if answer.status == 429:
                reset = answer.headers.get("x-ratelimit-reset", "").split(",", 1)[0].strip()
                when = f"; it resets in {reset} s" if reset.isdigit() else ""
                raise SearchBackendError(
                    f"Brave Search's rate limit for this plan is reached (HTTP 429){when}; "
                    "try again later",
                    fix="wait, or raise the plan's limits",
                )
            shown = f": {detail}" if detail else ""
            raise SearchBackendError(
                f"Brave Search refused the search (HTTP {answer.status}"
                f"{', ' + code if code else ''}){shown}",
                fix="check tools.web_search.url and the service's status",
            )
        body = json_object(
            answer, "Brave Search", "check tools.web_search.url: the Brave Search API's address"
        )
        web = body.get("web")
        results = web.get("results") if isinstance(web, dict) else []
        if not isinstance(results, list):
            raise SearchBackendError("Brave Search's answer has no web results list")
        hits: list[SearchHit] = []
        for item in results:
            if len(hits) >= count:
                break
            if isinstance(item, dict):
                hit = hit_of(item.get("title"), item.get("url"), item.get("description"))
                if hit is not None:
                    hits.append(hit)
        return hits

    @staticmethod
    def _error(answer: SearchAnswer) -> tuple[str, str]:
        """The ``code`` and ``detail`` of an ErrorResponse, or empty strings."""
        try:
            body = json.loads(answer.body)
        except ValueError:
            return "", ""
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            return "", ""
        return plain(error.get("code"), 60), plain(error.get("detail"), 200)


def backend_for(
    cfg: WebSearchToolConfig, environ: Mapping[str, str] | None = None
) -> SearchBackend | None:
    """The configured backend, None for ``backend = "none"``; :class:`ConfigError` naming
    the variable to set when a hosted backend's key is missing. The key is registered for
    scrubbing."""
    from bot.config import Settings
    from bot.scrub import register_secret

    if cfg.backend == "searxng":
        return SearxngBackend(cfg.base_url)
    if cfg.backend == "brave":
        key = Settings.secret(cfg.api_key_env, environ)
        if key is None:
            raise ConfigError(
                'tools.web_search.backend = "brave" needs an API key: set the environment '
                f"variable {cfg.api_key_env} (or point tools.web_search.api_key_env at the one "
                "that holds it)"
            )
        register_secret(key)
        return BraveBackend(cfg.base_url, api_key=key, key_env=cfg.api_key_env)
    return None
