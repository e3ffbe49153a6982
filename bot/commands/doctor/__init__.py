"""``hatchway doctor``: check a configuration against the outside world before running it.

One line per check, ``✓`` or ``✗``, and for each failure what to fix. This module is the
command's driver and the one place that orders the checks; each area is its own module:

1. the config file parses and validates (:mod:`.configuration`);
2. each enabled channel's credentials, asked of the platform's own API at the configured base
   URL (Telegram ``getMe``, Slack ``auth.test`` and, in socket mode, the app token with
   ``apps.connections.open``, Discord ``GET /users/@me``) (:mod:`.credentials`); a Telegram
   channel keeping group context: whether the bot can see unaddressed group messages
   (:mod:`.group_context`);
3. each provider of every agent's chain: its model list, or a 1-token completion when the
   endpoint has no model list; for the embedded model, that its runtime and model file are
   installed (:mod:`.provider`);
4. where the state folder is and which rule chose it (``--state-dir``,
   ``HATCHWAY_STATE_DIR``, ``state_dir``, the default: :mod:`bot.ops.state`); the database:
   it opens, ``PRAGMA integrity_check`` says ok, and it accepts a write (a missing file is a
   ``⚠`` naming the folder and its source when its directory is writable: the daemon
   creates it) (:mod:`.database`); with ``[storage]
   url``, the PostgreSQL server answers with the configured credentials, runs version 13
   or newer and accepts writes (:mod:`.postgres`);
   It never applies migrations: pending ones are a ``⚠`` line, a schema newer than this
   version a failure;
5. the tool workspace directory is writable, or can be made (:mod:`.workspace`), and
   ``shell`` commands will run under bubblewrap as ``tools.shell.sandbox`` asks
   (:mod:`.sandbox`); with ``tools.web_search.backend``, the backend answers a test search
   in JSON and accepts its key (:mod:`.web_search`);
6. people can talk to the bot on each channel (:mod:`.access`) and approvals can succeed
   there (:mod:`bot.approval.findings`): each finding is a ``⚠`` line with its fix, which
   does not change the exit status;
7. the routing table: the agent of each channel and of each route, and a ``⚠`` for a route
   that can never match (:mod:`.routing`);
8. with ``[telemetry]`` enabled: the ``otel`` extra is installed, and the collector takes
   an empty export with the configured headers (:mod:`.telemetry`);
9. with ``[transcription]`` on: each provider transcribes a moment of silence, or the
   ``voice`` extra is installed and ``ffmpeg`` found (:mod:`.transcription`).

Every failure and every warning names the config key to fix (``channels.slack.main.
app_token_env``, ``providers.default.base_url``, ``storage.path``, …). A failing config stops
the run; every later check runs even when an earlier one failed, and a check that cannot
reach its endpoint or raises a :class:`~bot.errors.HatchwayError` becomes a failed line,
never a traceback. Exit status 1 when any check fails. It changes nothing: no database,
folder or schema is created or migrated. Run it as the service user
(docs/operations.md shows how, with the service's environment file) so that files it opens
keep the right owner. Secrets are sent only to the endpoints they belong to and never
printed.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.doctor.access import access_findings
from bot.commands.doctor.configuration import config_check, state_line
from bot.commands.doctor.credentials import channel_check
from bot.commands.doctor.database import database_check
from bot.commands.doctor.endpoint import open_session
from bot.commands.doctor.group_context import telegram_group_context
from bot.commands.doctor.postgres import postgres_check, replicas_check
from bot.commands.doctor.provider import provider_check
from bot.commands.doctor.report import CheckResult, Outcome
from bot.commands.doctor.routing import routing_findings
from bot.commands.doctor.workspace import workspace_check
from bot.errors import HatchwayError

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.ops.state import StateLocation

__all__ = ["CheckResult", "register", "run_checks"]


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    doctor = subparsers.add_parser("doctor", help="check the config, credentials and storage")
    add_config_argument(doctor)
    doctor.set_defaults(handler=_doctor)


async def _doctor(args: argparse.Namespace) -> int:
    loaded, first = config_check(args.config, args.state_dir)
    if loaded is None:
        print(first.render())
        return 1
    settings, location = loaded
    results = [first, state_line(location)]
    for line in results:
        print(line.render(), flush=True)
    results += await run_checks(settings, location)
    failed = sum(not r.ok for r in results)
    print(f"{len(results) - failed} passed, {failed} failed" if failed else "all checks passed")
    return 1 if failed else 0


async def run_checks(settings: Settings, location: StateLocation) -> list[CheckResult]:
    """Every check after the config and state ones, printed as each finishes."""
    results: list[CheckResult] = []

    def emit(result: CheckResult) -> None:
        results.append(result)
        print(result.render(), flush=True)

    async with open_session() as http:
        for kind, alias, cfg in settings.channels.all():
            if cfg.enabled:
                key = f"channels.{kind}.{alias}"
                check = channel_check(kind, alias, cfg, http)
                emit(await _guard(f"channel {kind}.{alias}", check, key, f"{key}.api_base_url"))
                if kind == "telegram":
                    seen = await _optional(telegram_group_context(alias, cfg, http))
                    if seen is not None:
                        emit(seen)
        chains = (settings.agent_for(agent) for agent in settings.agent_names())
        for name in dict.fromkeys(n for c in chains for n in [c.provider, *c.fallback]):
            config = settings.providers.get(name)
            if config is not None:
                key = f"providers.{name}"
                answer = provider_check(name, config, http, state_dir=settings.state_dir)
                emit(await _guard(f"provider {name}", answer, key, f"{key}.base_url"))
        if settings.telemetry.enabled:
            from bot.commands.doctor.telemetry import collector_check, packages_check

            emit(packages_check())
            collector = collector_check(settings.telemetry, http)
            emit(
                await _guard(
                    "telemetry collector", collector, "telemetry.headers_env", "telemetry.endpoint"
                )
            )
        if settings.transcription.enabled:
            from bot.commands.doctor.transcription import transcription_checks

            for line in await transcription_checks(settings.transcription, http):
                emit(line)
    if settings.storage.url:
        emit(await _guard("database", postgres_check(settings), "storage.url"))
        replicas = await _optional(replicas_check(settings))
        if replicas is not None:
            emit(replicas)
    else:
        database = database_check(settings, location)
        emit(await _guard("database", database, "storage.path"))
    workspace = Path(settings.state_dir) / settings.tools.workspace.path
    ok, detail, fix = workspace_check(workspace)
    emit(CheckResult(name="workspace", ok=ok, detail=detail, fix=fix))
    # imported here: its probe lives in bot.tools.builtin, whose package loads every tool,
    # which ``hatchway --help`` (this package is imported to build the command line) must not
    from bot.commands.doctor.sandbox import sandbox_check

    emit(sandbox_check(settings.tools.shell))
    if settings.tools.web_search.backend != "none":
        from bot.commands.doctor.web_search import web_search_check

        emit(await web_search_check(settings.tools.web_search))
    for access in access_findings(settings):
        emit(access)
    from bot.approval.findings import approval_findings

    for finding in await approval_findings(settings):
        emit(
            CheckResult(
                name=f"approvals {finding.channel}",
                ok=True,
                warning=True,
                detail=finding.problem,
                fix=finding.fix,
            )
        )
    for line in routing_findings(settings):
        emit(line)
    return results


async def _optional(check: Awaitable[CheckResult | None]) -> CheckResult | None:
    """A check that adds a line only when it has something to say; an unreachable
    endpoint says nothing more than the credentials line already did."""
    import aiohttp

    try:
        return await check
    except (aiohttp.ClientError, TimeoutError):
        return None


async def _guard(
    name: str, check: Awaitable[Outcome | CheckResult], key: str, url_key: str = ""
) -> CheckResult:
    """Run one check; an unreachable endpoint or a ``HatchwayError`` is a failed line whose
    fix names ``url_key`` (the endpoint's base URL) or ``key`` (the settings checked)."""
    import aiohttp

    try:
        outcome = await check
    except (aiohttp.ClientError, TimeoutError) as exc:
        detail = f"cannot reach the endpoint: {type(exc).__name__} {exc}".strip()
        fix = f"check {url_key or key}, DNS, proxy settings and the firewall"
        return CheckResult(name=name, ok=False, detail=detail, fix=fix)
    except HatchwayError as exc:
        return CheckResult(name=name, ok=False, detail=str(exc), fix=f"check {key}")
    if isinstance(outcome, CheckResult):
        return outcome
    ok, detail, fix = outcome
    return CheckResult(name=name, ok=ok, detail=detail, fix=fix)
