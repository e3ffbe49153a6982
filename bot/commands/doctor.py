"""``hatchway doctor``: check a configuration against the outside world before running it.

One line per check, ``✓`` or ``✗``, and for each failure what to fix:

1. the config file parses and validates;
2. each enabled channel's credentials, asked of the platform's own API at the configured base
   URL (Telegram ``getMe``, Slack ``auth.test`` and, in socket mode, the app token with
   ``apps.connections.open``, Discord ``GET /users/@me``);
3. each provider of the agent's chain: its model list, or a 1-token completion when the
   endpoint has no model list;
4. the database: it opens, ``PRAGMA integrity_check`` says ok, and it accepts a write
   (a missing file only needs a writable directory);
5. the tool workspace directory is writable.

Exit status 1 when any check fails. Run it as the
service user (``sudo -u hatchway hatchway doctor``) so that files it opens keep the right
owner. Secrets are sent only to the endpoints they belong to and never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.errors import ConfigError, HatchwayError

if TYPE_CHECKING:
    # aiohttp, the settings models and the provider factory are imported when the doctor
    # runs, not when ``hatchway --help`` builds the command line.
    import aiohttp

    from bot.config import (
        ChannelCommon,
        DiscordChannelConfig,
        ProviderConfig,
        Settings,
        SlackChannelConfig,
        TelegramChannelConfig,
    )

HTTP_TIMEOUT_S = 15.0
DISCORD_API = "https://discord.com/api/v10"
ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """One line of the report; ``fix`` says what to do when ``ok`` is false."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def render(self) -> str:
        mark = "✓" if self.ok else "✗"
        line = f"{mark} {self.name}: {self.detail}"
        return line if self.ok or not self.fix else f"{line}\n    fix: {self.fix}"


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    doctor = subparsers.add_parser("doctor", help="check the config, credentials and storage")
    add_config_argument(doctor)
    doctor.set_defaults(handler=_doctor)


async def _doctor(args: argparse.Namespace) -> int:
    from bot.config import load_settings, resolve_config_path

    path = resolve_config_path(args.config)
    source = str(path) if path is not None else "the environment (no config file)"
    try:
        settings = load_settings(path)
    except ConfigError as exc:
        print(CheckResult(name="config", ok=False, detail=str(exc), fix=_config_fix()).render())
        return 1
    results = [CheckResult(name="config", ok=True, detail=f"{source} is valid")]
    print(results[0].render(), flush=True)
    results += await run_checks(settings)
    failed = sum(not r.ok for r in results)
    print(f"{len(results) - failed} passed, {failed} failed" if failed else "all checks passed")
    return 1 if failed else 0


def _config_fix() -> str:
    return "edit the key named above (docs/configuration.md lists every key)"


async def run_checks(settings: Settings) -> list[CheckResult]:
    """Every check after the config one, printed as each finishes."""
    import aiohttp

    results: list[CheckResult] = []

    def emit(result: CheckResult) -> None:
        results.append(result)
        print(result.render(), flush=True)

    timeout = aiohttp.ClientTimeout(total=HTTP_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        for kind, alias, cfg in settings.channels.all():
            if cfg.enabled:
                emit(await _guard(f"channel {kind}.{alias}", _channel_check(kind, cfg, http)))
        for name in dict.fromkeys([settings.agent.provider, *settings.agent.fallback]):
            config = settings.providers.get(name)
            if config is not None:
                emit(await _guard(f"provider {name}", _provider_check(name, config, http)))
    emit(await _guard("database", _database_check(settings.database_path())))
    workspace = Path(settings.state_dir) / settings.tools.workspace.path
    emit(_workspace_check(workspace))
    return results


async def _guard(name: str, check: Awaitable[tuple[bool, str, str]]) -> CheckResult:
    import aiohttp

    try:
        ok, detail, fix = await check
    except (aiohttp.ClientError, TimeoutError) as exc:
        ok, detail = False, f"cannot reach the endpoint: {type(exc).__name__} {exc}".strip()
        fix = "check the base URL in the config, DNS, proxy settings and the firewall"
    except HatchwayError as exc:
        ok, detail, fix = False, str(exc), "see the message"
    return CheckResult(name=name, ok=ok, detail=detail, fix=fix)


# -- channels -------------------------------------------------------------------------------

Outcome = tuple[bool, str, str]


async def _channel_check(kind: str, cfg: ChannelCommon, http: aiohttp.ClientSession) -> Outcome:
    checks: dict[str, Callable[[Any, aiohttp.ClientSession], Awaitable[Outcome]]] = {
        "telegram": _telegram,
        "slack": _slack,
        "discord": _discord,
    }
    check = checks.get(kind)
    if check is None:
        return True, "local channel, no credentials", ""
    return await check(cfg, http)


def _secret(env_name: str, what: str) -> str:
    from bot.config import Settings

    value = Settings.secret(env_name)
    if value is None:
        raise ConfigError(f"{what}: the environment variable {env_name} is not set")
    return value


async def _telegram(cfg: TelegramChannelConfig, http: aiohttp.ClientSession) -> Outcome:
    token = _secret(cfg.token_env, "bot token")
    async with http.post(f"{cfg.api_base_url}{token}/getMe") as response:
        body = await _json(response)
    if response.status == 200 and body.get("ok"):
        return True, f"token accepted for @{body['result'].get('username', '?')}", ""
    return (
        False,
        f"getMe refused the token (HTTP {response.status})",
        (f"put a valid token from @BotFather into {cfg.token_env}"),
    )


async def _slack(cfg: SlackChannelConfig, http: aiohttp.ClientSession) -> Outcome:
    bot = _secret(cfg.bot_token_env, "bot token")
    ok, detail = await _slack_call(http, cfg.api_base_url, "auth.test", bot)
    if not ok:
        return False, f"auth.test: {detail}", f"put the xoxb- bot token into {cfg.bot_token_env}"
    if cfg.mode == "socket":
        app = _secret(cfg.app_token_env, "app token")
        app_ok, app_detail = await _slack_call(http, cfg.api_base_url, "apps.connections.open", app)
        if not app_ok:
            return (
                False,
                f"app token: {app_detail}",
                (
                    f"put an xapp- token with connections:write into {cfg.app_token_env} and "
                    "enable Socket Mode"
                ),
            )
    else:
        _secret(cfg.signing_secret_env, "signing secret")
    return True, detail, ""


async def _slack_call(
    http: aiohttp.ClientSession, base: str, method: str, token: str
) -> tuple[bool, str]:
    url = base.rstrip("/") + "/" + method
    async with http.post(url, headers={"Authorization": f"Bearer {token}"}) as response:
        body = await _json(response)
    if response.status == 200 and body.get("ok"):
        who = body.get("user") or body.get("bot_id") or ""
        team = body.get("team") or ""
        return True, f"token accepted{f' for {who}' if who else ''}{f' in {team}' if team else ''}"
    return False, f"refused ({body.get('error') or f'HTTP {response.status}'})"


async def _discord(cfg: DiscordChannelConfig, http: aiohttp.ClientSession) -> Outcome:
    token = _secret(cfg.token_env, "bot token")
    base = (cfg.api_base_url or DISCORD_API).rstrip("/")
    headers = {"Authorization": f"Bot {token}"}
    async with http.get(f"{base}/users/@me", headers=headers) as response:
        body = await _json(response)
    if response.status == 200:
        return True, f"token accepted for {body.get('username', '?')}", ""
    return (
        False,
        f"/users/@me refused the token (HTTP {response.status})",
        (f"put the bot token from the Developer Portal into {cfg.token_env}"),
    )


# -- providers ------------------------------------------------------------------------------


async def _provider_check(name: str, cfg: ProviderConfig, http: aiohttp.ClientSession) -> Outcome:
    from bot.providers.factory import api_key_for

    key = api_key_for(name, cfg, None)
    if cfg.kind == "anthropic":
        base = (cfg.base_url or ANTHROPIC_API).rstrip("/")
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        models_url = f"{base}/v1/models"
    else:
        base = (cfg.base_url or OPENAI_API).rstrip("/")
        headers = {"Authorization": f"Bearer {key}"}
        models_url = f"{base}/models"
    async with http.get(models_url, headers=headers) as response:
        body = await _json(response)
    if response.status in (401, 403):
        return (
            False,
            f"the endpoint refused the API key (HTTP {response.status})",
            (f"set a valid key in {cfg.api_key_env}"),
        )
    if response.status == 200 and isinstance(body.get("data"), list):
        offered = [str(m.get("id", "")) for m in body["data"] if isinstance(m, dict)]
        if offered and cfg.model not in offered:
            shown = ", ".join(offered[:8])
            return (
                False,
                f"model {cfg.model!r} is not offered (offered: {shown})",
                (f"set providers.{name}.model to one of them, or pull the model"),
            )
        return True, f"{base} answers; model {cfg.model!r} available", ""
    return await _one_token(name, cfg, base, headers, http)


async def _one_token(
    name: str,
    cfg: ProviderConfig,
    base: str,
    headers: dict[str, str],
    http: aiohttp.ClientSession,
) -> Outcome:
    """No usable model list: ask for a 1-token completion instead."""
    prompt = [{"role": "user", "content": "ping"}]
    body: dict[str, object] = {"model": cfg.model, "messages": prompt, "max_tokens": 1}
    url = f"{base}/v1/messages" if cfg.kind == "anthropic" else f"{base}/chat/completions"
    async with http.post(url, json=body, headers=headers) as response:
        answer = await _json(response)
    if response.status == 200:
        return True, f"{base} completed a 1-token request with {cfg.model!r}", ""
    error = answer.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return (
        False,
        f"1-token completion failed (HTTP {response.status}: {message or 'no detail'})",
        (f"check providers.{name}.base_url, .model and {cfg.api_key_env}"),
    )


async def _json(response: aiohttp.ClientResponse) -> dict[str, Any]:
    try:
        body = await response.json(content_type=None)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


# -- local state ----------------------------------------------------------------------------


async def _database_check(path: Path) -> Outcome:
    if not await asyncio.to_thread(path.exists):
        parent = _existing_parent(path)
        if os.access(parent, os.W_OK):
            return True, f"{path} does not exist yet; it will be created at start", ""
        return (
            False,
            f"{path} does not exist and {parent} is not writable",
            ("create the directory and give the service user write access"),
        )
    from bot.store import Database

    db = await Database.open(path)
    try:
        integrity = await db.integrity_check()
        version = await db.schema_version()
        if integrity != "ok":
            return (
                False,
                f"integrity_check: {integrity}",
                ("stop the service and restore the latest backup (docs/operations.md)"),
            )
        async with db.transaction():
            pass
    finally:
        await db.aclose()
    return True, f"{path} ok (schema {version}, integrity ok, writable)", ""


def _workspace_check(path: Path) -> CheckResult:
    name = "workspace"
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-"):
            pass
    except OSError as exc:
        return CheckResult(
            name=name,
            ok=False,
            detail=f"{path} is not writable ({exc.strerror or exc})",
            fix="give the service user write access (systemd: ReadWritePaths/StateDirectory)",
        )
    return CheckResult(name=name, ok=True, detail=f"{path} is writable")


def _existing_parent(path: Path) -> Path:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent
