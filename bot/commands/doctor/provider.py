"""The provider check: each provider of the agent's chain answers with its configured key.

Its model list first (``/models``, Anthropic ``/v1/models``): a refused key fails, a list
that does not offer the configured model fails naming what it offers. An endpoint without a
usable model list is asked for a 1-token completion instead. The API key is sent only to
the provider's own base URL. Every fix names the key to change
(``providers.<name>.api_key_env``, ``.model``, ``.base_url``); a missing key fails without
asking the endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.endpoint import json_object
from bot.commands.doctor.report import Outcome
from bot.errors import ConfigError

if TYPE_CHECKING:
    import aiohttp

    from bot.config import ProviderConfig

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"
SHOWN_MODELS = 8


async def provider_check(name: str, cfg: ProviderConfig, http: aiohttp.ClientSession) -> Outcome:
    """Whether provider ``name`` accepts its key and offers its configured model."""
    from bot.providers.factory import api_key_for

    try:
        key = api_key_for(name, cfg, None)
    except ConfigError as exc:
        return (
            False,
            str(exc),
            f"set {cfg.api_key_env} in the service's environment file (or name another "
            f"variable in providers.{name}.api_key_env)",
        )
    if cfg.kind == "anthropic":
        base = (cfg.base_url or ANTHROPIC_API).rstrip("/")
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        models_url = f"{base}/v1/models"
    else:
        base = (cfg.base_url or OPENAI_API).rstrip("/")
        headers = {"Authorization": f"Bearer {key}"}
        models_url = f"{base}/models"
    async with http.get(models_url, headers=headers) as response:
        body = await json_object(response)
    if response.status in (401, 403):
        return (
            False,
            f"the endpoint refused the API key (HTTP {response.status})",
            f"put a valid key into {cfg.api_key_env} (providers.{name}.api_key_env)",
        )
    if response.status == 200 and isinstance(body.get("data"), list):
        offered = [str(m.get("id", "")) for m in body["data"] if isinstance(m, dict)]
        if offered and cfg.model not in offered:
            shown = ", ".join(offered[:SHOWN_MODELS])
            return (
                False,
                f"model {cfg.model!r} is not offered (offered: {shown})",
                f"set providers.{name}.model to one of them, or pull the model",
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
        answer = await json_object(response)
    if response.status == 200:
        return True, f"{base} completed a 1-token request with {cfg.model!r}", ""
    error = answer.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    return (
        False,
        f"1-token completion failed (HTTP {response.status}: {message or 'no detail'})",
        f"check providers.{name}.base_url, providers.{name}.model and the key in "
        f"{cfg.api_key_env} (providers.{name}.api_key_env)",
    )
