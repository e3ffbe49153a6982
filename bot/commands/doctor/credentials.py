"""The platform-credentials check: each enabled channel's secrets, asked of its platform.

Telegram ``getMe``; Slack ``auth.test`` with the bot token and, in socket mode,
``apps.connections.open`` with the app token (in HTTP mode the signing secret must be set);
Discord ``GET /users/@me``. Each request goes to the channel's configured base URL, so a
token is sent only to the platform it belongs to; a local channel has no credentials.

A missing environment variable raises :class:`~bot.errors.ConfigError` (the driver reports
it); a refused token is a failed :data:`~bot.commands.doctor.report.Outcome` naming the
variable to fix.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from bot.commands.doctor.endpoint import json_object
from bot.commands.doctor.report import Outcome
from bot.errors import ConfigError

if TYPE_CHECKING:
    import aiohttp

    from bot.config import ChannelCommon


# The keys each check reads from its platform's config model (``channels/<kind>/config.py``,
# which ``bot`` does not import).
class _TelegramKeys(Protocol):
    @property
    def token_env(self) -> str: ...
    @property
    def api_base_url(self) -> str: ...


class _SlackKeys(Protocol):
    @property
    def bot_token_env(self) -> str: ...
    @property
    def app_token_env(self) -> str: ...
    @property
    def signing_secret_env(self) -> str: ...
    @property
    def api_base_url(self) -> str: ...
    @property
    def mode(self) -> str: ...


class _DiscordKeys(Protocol):
    @property
    def token_env(self) -> str: ...
    @property
    def api_base_url(self) -> str | None: ...


DISCORD_API = "https://discord.com/api/v10"


async def channel_check(kind: str, cfg: ChannelCommon, http: aiohttp.ClientSession) -> Outcome:
    """Ask the platform of a ``kind`` channel whether its credentials are accepted."""
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


async def _telegram(cfg: _TelegramKeys, http: aiohttp.ClientSession) -> Outcome:
    token = _secret(cfg.token_env, "bot token")
    async with http.post(f"{cfg.api_base_url}{token}/getMe") as response:
        body = await json_object(response)
    if response.status == 200 and body.get("ok"):
        return True, f"token accepted for @{body['result'].get('username', '?')}", ""
    return (
        False,
        f"getMe refused the token (HTTP {response.status})",
        (f"put a valid token from @BotFather into {cfg.token_env}"),
    )


async def _slack(cfg: _SlackKeys, http: aiohttp.ClientSession) -> Outcome:
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
        body = await json_object(response)
    if response.status == 200 and body.get("ok"):
        who = body.get("user") or body.get("bot_id") or ""
        team = body.get("team") or ""
        return True, f"token accepted{f' for {who}' if who else ''}{f' in {team}' if team else ''}"
    return False, f"refused ({body.get('error') or f'HTTP {response.status}'})"


async def _discord(cfg: _DiscordKeys, http: aiohttp.ClientSession) -> Outcome:
    token = _secret(cfg.token_env, "bot token")
    base = (cfg.api_base_url or DISCORD_API).rstrip("/")
    headers = {"Authorization": f"Bot {token}"}
    async with http.get(f"{base}/users/@me", headers=headers) as response:
        body = await json_object(response)
    if response.status == 200:
        return True, f"token accepted for {body.get('username', '?')}", ""
    return (
        False,
        f"/users/@me refused the token (HTTP {response.status})",
        (f"put the bot token from the Developer Portal into {cfg.token_env}"),
    )
