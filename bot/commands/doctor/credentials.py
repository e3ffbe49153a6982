"""The platform-credentials check: each enabled channel's secrets, asked of its platform.

First every secret the channel needs must be set: Telegram's and Discord's bot token; Slack's
bot token and, in socket mode, the app-level token (``xapp-``) Socket Mode connects with, or
in HTTP mode the signing secret. A missing one fails naming each variable and the key that
names it (``channels.slack.main.app_token_env``), and the platform is not asked. Then the
platform's own API is asked at the configured base URL: Telegram ``getMe``; Slack
``auth.test`` with the bot token and, in socket mode, ``apps.connections.open`` with the app
token; Discord ``GET /users/@me``. A token is sent only to the platform it belongs to; a
local channel has no credentials. A refused token fails; the fix names the variable and the
key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from bot.commands.doctor.endpoint import json_object
from bot.commands.doctor.report import Outcome

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

_Check = Callable[[str, Any, "aiohttp.ClientSession"], Awaitable[Outcome]]


async def channel_check(
    kind: str, alias: str, cfg: ChannelCommon, http: aiohttp.ClientSession
) -> Outcome:
    """Whether channel ``kind.alias`` has its secrets and the platform accepts them."""
    checks: dict[str, _Check] = {"telegram": _telegram, "slack": _slack, "discord": _discord}
    check = checks.get(kind)
    if check is None:
        return True, "local channel, no credentials", ""
    key = f"channels.{kind}.{alias}"
    missing = _missing(key, cfg, _needed(kind, cfg))
    if missing is not None:
        return missing
    return await check(key, cfg, http)


def _needed(kind: str, cfg: Any) -> list[tuple[str, str]]:
    """``(key, what)`` for each secret a channel of ``kind`` needs, in the order asked."""
    if kind != "slack":
        return [("token_env", "bot token")]
    if cfg.mode == "socket":
        return [("bot_token_env", "bot token"), ("app_token_env", "Socket Mode app token")]
    return [("bot_token_env", "bot token"), ("signing_secret_env", "signing secret")]


def _missing(key: str, cfg: Any, needed: list[tuple[str, str]]) -> Outcome | None:
    """A failed outcome naming every unset secret and its key; None when all are set."""
    from bot.config import Settings

    unset = [
        (f"{key}.{field}", str(getattr(cfg, field)), what)
        for field, what in needed
        if Settings.secret(str(getattr(cfg, field))) is None
    ]
    if not unset:
        return None
    detail = "; ".join(
        f"{what}: the environment variable {env} is not set" for _, env, what in unset
    )
    names = " and ".join(env for _, env, _ in unset)
    keys = " and ".join(name for name, _, _ in unset)
    other = "other variables" if len(unset) > 1 else "another variable"
    fix = f"set {names} in the service's environment file (or name {other} in {keys})"
    return False, detail, fix


def _secret(env_name: str) -> str:
    from bot.config import Settings

    return Settings.secret(env_name) or ""  # set: _missing has checked it


async def _telegram(key: str, cfg: _TelegramKeys, http: aiohttp.ClientSession) -> Outcome:
    token = _secret(cfg.token_env)
    async with http.post(f"{cfg.api_base_url}{token}/getMe") as response:
        body = await json_object(response)
    if response.status == 200 and body.get("ok"):
        return True, f"token accepted for @{body['result'].get('username', '?')}", ""
    return (
        False,
        f"getMe refused the token (HTTP {response.status})",
        f"put a valid token from @BotFather into {cfg.token_env} ({key}.token_env)",
    )


async def _slack(key: str, cfg: _SlackKeys, http: aiohttp.ClientSession) -> Outcome:
    ok, detail = await _slack_call(http, cfg.api_base_url, "auth.test", _secret(cfg.bot_token_env))
    if not ok:
        return (
            False,
            f"auth.test: {detail}",
            f"put the xoxb- bot token into {cfg.bot_token_env} ({key}.bot_token_env)",
        )
    if cfg.mode == "socket":
        app = _secret(cfg.app_token_env)
        app_ok, app_detail = await _slack_call(http, cfg.api_base_url, "apps.connections.open", app)
        if not app_ok:
            return (
                False,
                f"Socket Mode app token: {app_detail}",
                f"put an xapp- token with connections:write into {cfg.app_token_env} "
                f'({key}.app_token_env) and enable Socket Mode, or set {key}.mode = "http"',
            )
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


async def _discord(key: str, cfg: _DiscordKeys, http: aiohttp.ClientSession) -> Outcome:
    base = (cfg.api_base_url or DISCORD_API).rstrip("/")
    headers = {"Authorization": f"Bot {_secret(cfg.token_env)}"}
    async with http.get(f"{base}/users/@me", headers=headers) as response:
        body = await json_object(response)
    if response.status == 200:
        return True, f"token accepted for {body.get('username', '?')}", ""
    return (
        False,
        f"/users/@me refused the token (HTTP {response.status})",
        f"put the bot token from the Developer Portal into {cfg.token_env} ({key}.token_env)",
    )
