"""Building the agent's provider from configuration: primary, fallbacks, tool mode.

``tool_mode = "auto"`` resolves by a fixed rule (also in ``docs/providers.md``):

* ``kind = "embedded"`` → off (the small model cannot choose tools: no tools are offered).
* ``kind = "anthropic"`` → native.
* ``kind = "openai"`` with no ``base_url`` (api.openai.com) → native.
* any other OpenAI-compatible endpoint → native when the model name (case-insensitive, the
  part after the last ``/`` or ``:`` prefix ignored) contains a family known to call tools
  natively through that API (:data:`NATIVE_TOOL_FAMILIES`), otherwise the text protocol.

An API key is required unless ``base_url`` points at this machine or a private network
(Ollama, vLLM, LM Studio, llama.cpp usually run without one); then a placeholder is sent.
An embedded provider needs no key; instead the llama.cpp runtime and its model file must be
installed, which is checked when the chain is built (start-up), not at the first message.

A provider's system prompt is ``providers.<name>.system_prompt`` when set. The embedded
model otherwise gets its own short one (:data:`~bot.providers.embedded.EMBEDDED_SYSTEM_PROMPT`)
unless the configuration sets ``agent.system_prompt``; every other provider gets the agent's.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from bot.config import AgentConfig, ProviderConfig, Settings
from bot.config.embedded import embedded_problems, resolve_model_file
from bot.errors import ConfigError
from bot.providers.base import Provider
from bot.providers.deferred import DeferredProvider
from bot.providers.fallback import FallbackProvider
from bot.providers.retry import Retrier, RetryPolicy, Sleep
from bot.providers.shaped import ShapedProvider
from bot.providers.text_protocol import TextProtocolProvider
from bot.scrub import register_secret

NATIVE_TOOL_FAMILIES = (
    "gpt-",
    "o1",
    "o3",
    "o4",
    "claude",
    "gemini",
    "llama3.1",
    "llama-3.1",
    "llama3.2",
    "llama-3.2",
    "llama3.3",
    "llama-3.3",
    "llama4",
    "llama-4",
    "qwen2.5",
    "qwen3",
    "qwq",
    "mistral-nemo",
    "mistral-small",
    "mistral-large",
    "mixtral",
    "ministral",
    "command-r",
    "hermes",
    "firefunction",
    "granite3",
    "deepseek-v3",
    "deepseek-chat",
    "glm-4",
    "kimi",
    "gpt-oss",
)

PLACEHOLDER_KEY = "not-needed"


ToolMode = Literal["native", "text", "off"]


def resolve_tool_mode(config: ProviderConfig) -> ToolMode:
    """The tool mode a provider runs in; ``auto`` follows the rule in the module doc."""
    if config.tool_mode != "auto":
        return config.tool_mode
    if config.kind == "embedded":
        return "off"
    if config.kind == "anthropic" or config.base_url is None:
        return "native"
    model = config.model.lower().rsplit("/", 1)[-1]
    return "native" if any(family in model for family in NATIVE_TOOL_FAMILIES) else "text"


def is_local_endpoint(base_url: str | None) -> bool:
    """Whether ``base_url`` names this machine or a private network address."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "host.docker.internal") or host.endswith((".local", ".localhost")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def api_key_for(name: str, config: ProviderConfig, environ: Mapping[str, str] | None) -> str:
    """The provider's API key from the environment (registered for scrubbing), a placeholder
    for a local endpoint without one, or :class:`ConfigError` naming the variable to set."""
    api_key = Settings.secret(config.api_key_env, environ)
    if api_key is None:
        if not is_local_endpoint(config.base_url):
            raise ConfigError(
                f"providers.{name} needs an API key: set the environment variable "
                f"{config.api_key_env} (or point providers.{name}.api_key_env at the one "
                "that holds it)"
            )
        return PLACEHOLDER_KEY
    register_secret(api_key)
    return api_key


def embedded_model_file(name: str, config: ProviderConfig, state_dir: str) -> Path:
    """The GGUF file embedded provider ``name`` runs; :class:`ConfigError` naming what to
    install (or which key to fix) when the runtime or the file is missing."""
    problems = embedded_problems(name, config.model_path, state_dir)
    if problems or config.model_path is None:
        raise ConfigError(
            f'providers.{name} (kind = "embedded") cannot run: ' + "; ".join(problems)
        )
    return resolve_model_file(config.model_path, state_dir)


def own_system_prompt(config: ProviderConfig, agent: AgentConfig) -> str | None:
    """The system prompt provider ``config`` is sent instead of the agent's, if any (see the
    module doc)."""
    if config.system_prompt is not None:
        return config.system_prompt
    if config.kind == "embedded" and "system_prompt" not in agent.model_fields_set:
        from bot.providers.embedded import EMBEDDED_SYSTEM_PROMPT

        return EMBEDDED_SYSTEM_PROMPT
    return None


def build_one(
    name: str,
    config: ProviderConfig,
    *,
    api_key: str,
    sleep: Sleep,
    system: str | None = None,
    state_dir: str = ".",
) -> Provider:
    """One configured provider with its retries, tool mode and system prompt (``system``,
    from :func:`own_system_prompt`).

    A provider's module (with the ``anthropic`` SDK, a second or more to import) is imported
    here, when a provider of that kind is built, not when this module is. An embedded
    provider starts loading its model here, on a thread of its own."""
    policy = RetryPolicy(max_retries=config.max_retries)
    retrier = Retrier(provider=name, policy=policy, sleep=sleep)
    provider: Provider
    if config.kind == "embedded":
        from bot.providers.embedded import EmbeddedProvider

        model_file = embedded_model_file(name, config, state_dir)
        embedded = EmbeddedProvider(config, name=name, model_file=model_file)
        embedded.start_loading()
        provider = embedded
    elif config.kind == "anthropic":
        from bot.providers.anthropic import AnthropicProvider

        provider = AnthropicProvider(config, name=name, api_key=api_key, retrier=retrier)
    else:
        from bot.providers.openai_compat import OpenAICompatProvider

        provider = OpenAICompatProvider(config, name=name, api_key=api_key, retrier=retrier)
    mode = resolve_tool_mode(config)
    if mode == "text":
        provider = TextProtocolProvider(provider)
    if system is not None or mode == "off":
        provider = ShapedProvider(provider, system=system, tools=mode != "off")
    return provider


def _check_chain(settings: Settings, environ: Mapping[str, str] | None) -> dict[str, str]:
    """Each provider name of the chain with its API key (``""`` for an embedded one, whose
    runtime and model file are checked instead); :class:`ConfigError` for an unknown name, a
    missing key, or an embedded model that cannot run."""
    names = list(dict.fromkeys([settings.agent.provider, *settings.agent.fallback]))
    unknown = [n for n in names if n not in settings.providers]
    if unknown:
        raise ConfigError(
            f"agent.provider/fallback names provider {unknown[0]!r}, but [providers] defines "
            f"{sorted(settings.providers) or 'none'}"
        )
    keys: dict[str, str] = {}
    for name in names:
        config = settings.providers[name]
        if config.kind == "embedded":
            embedded_model_file(name, config, settings.state_dir)
            keys[name] = ""
        else:
            keys[name] = api_key_for(name, config, environ)
    return keys


def sdk_module(config: ProviderConfig) -> str:
    """The module that imports a provider's vendor SDK (for the embedded provider, its own
    module: ``xllamacpp`` is imported when its model loads, on its own thread)."""
    if config.kind == "anthropic":
        return "bot.providers.anthropic"
    if config.kind == "embedded":
        return "bot.providers.embedded"
    return "bot.providers.openai_compat"


def build_provider(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    sleep: Sleep = asyncio.sleep,
) -> Provider:
    """The agent's provider: ``agent.provider`` then each of ``agent.fallback`` in order,
    wrapped in a :class:`FallbackProvider` when there is more than one.

    Raises :class:`ConfigError` for an unknown provider name or a missing API key, before any
    client is created. ``environ`` defaults to ``os.environ``; ``sleep`` is for tests.
    """
    keys = _check_chain(settings, environ)
    chain = [
        build_one(
            n,
            settings.providers[n],
            api_key=k,
            sleep=sleep,
            system=own_system_prompt(settings.providers[n], settings.agent),
            state_dir=settings.state_dir,
        )
        for n, k in keys.items()
    ]
    return chain[0] if len(chain) == 1 else FallbackProvider(chain)


def defer_provider(
    settings: Settings,
    *,
    environ: Mapping[str, str] | None = None,
    sleep: Sleep = asyncio.sleep,
) -> DeferredProvider:
    """:func:`build_provider`, with the vendor SDK imports and client construction deferred
    to :meth:`DeferredProvider.warm` or the first completion (see :mod:`bot.providers.deferred`).

    Configuration errors are raised now, exactly as :func:`build_provider` raises them.
    """
    keys = _check_chain(settings, environ)
    modules = dict.fromkeys(sdk_module(settings.providers[n]) for n in keys)

    def build() -> Provider:
        return build_provider(settings, environ=environ, sleep=sleep)

    return DeferredProvider(settings.agent.provider, build, modules)
