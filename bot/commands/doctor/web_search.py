"""The doctor's check of ``[tools.web_search]`` (only when a backend is configured): one
search through the same backend and transport the tool uses.

A SearXNG instance must answer JSON (``json`` in its ``search.formats``, else 403) and let
hatchway past its limiter (else 429); a hosted backend must accept its key (a missing
variable fails without asking). The test query is :data:`PROBE_QUERY`, one result asked for;
on Brave Search it counts as one request of the plan. The key goes only to the backend's URL
and is never printed.
"""

from __future__ import annotations

from bot.commands.doctor.report import CheckResult
from bot.config.tools import WebSearchToolConfig
from bot.errors import ConfigError

PROBE_QUERY = "hatchway"
NAME = "web search"


async def web_search_check(cfg: WebSearchToolConfig) -> CheckResult:
    """Whether the configured backend answers a search, or what to fix."""
    from bot.tools.builtin.search_backends import SearchBackendError, backend_for
    from bot.tools.builtin.web_search import ask

    try:
        backend = backend_for(cfg)
    except ConfigError as exc:
        return CheckResult(
            name=NAME,
            ok=False,
            detail=str(exc),
            fix=f"set {cfg.api_key_env} in the service's environment file",
        )
    if backend is None:
        return CheckResult(name=NAME, ok=True, detail="off (tools.web_search.backend)")
    try:
        hits = await ask(backend, PROBE_QUERY, 1, cfg)
    except SearchBackendError as exc:
        return CheckResult(
            name=NAME, ok=False, detail=str(exc), fix=exc.fix or "check tools.web_search"
        )
    where = cfg.base_url
    found = f"{len(hits)} result{'' if len(hits) == 1 else 's'} for a test query"
    detail = f"{backend.label} at {where} answers JSON ({found})"
    if cfg.backend == "brave":
        detail = f"{backend.label} at {where} accepts the key in {cfg.api_key_env}"
    return CheckResult(name=NAME, ok=True, detail=detail)
