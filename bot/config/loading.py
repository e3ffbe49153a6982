"""Loading the settings: the file, the environment's overrides, errors that name the key.

:func:`load_settings` reads ``hatchway.toml`` (or nothing: defaults plus environment),
:func:`parse_settings` validates a mapping into :class:`~bot.config.settings.Settings` after
the environment has had its say (``HATCHWAY_STATE_DIR``, ``HATCHWAY_MODEL``, an implicit
provider from ``OPENAI_*`` or ``ANTHROPIC_API_KEY``; with neither, the embedded local model
when it is installed), and :func:`resolve_config_path` finds the file. Every failure is a
:class:`~bot.errors.ConfigError` naming the key by its dotted path, with a hint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot.config.agents import read_prompt_file
from bot.config.embedded import INSTALL_BOTH, embedded_problems
from bot.config.settings import ProviderConfig, Settings
from bot.errors import ConfigError


def _provider_from_env(environ: Mapping[str, str]) -> dict[str, ProviderConfig]:
    """The implicit provider when the file declares none: OpenAI-compatible, then Anthropic."""
    model = environ.get("HATCHWAY_MODEL", "")
    if environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_KEY"):
        return {
            "default": ProviderConfig(
                kind="openai",
                base_url=environ.get("OPENAI_BASE_URL") or None,
                model=model or "gpt-4o-mini",
                api_key_env="OPENAI_API_KEY",
            )
        }
    if environ.get("ANTHROPIC_API_KEY"):
        return {
            "default": ProviderConfig(
                kind="anthropic",
                base_url=environ.get("ANTHROPIC_BASE_URL") or None,
                model=model or "claude-sonnet-4-5",
                api_key_env="ANTHROPIC_API_KEY",
            )
        }
    return {}


NO_PROVIDER_HINT = (
    "configure a provider: set OPENAI_BASE_URL (and OPENAI_API_KEY if the endpoint needs one) "
    "and HATCHWAY_MODEL, or ANTHROPIC_API_KEY, or add a [providers.default] table to "
    "hatchway.toml (see docs/providers.md)"
)


def _embedded_default(state_dir: str) -> dict[str, ProviderConfig]:
    """The embedded model as the provider when none is configured; :class:`ConfigError`
    naming both ways out when it cannot run here."""
    config = ProviderConfig(kind="embedded")
    problems = embedded_problems("default", config.model_path, state_dir)
    if problems:
        raise ConfigError(
            "no LLM provider is configured, and the embedded local model cannot run: "
            + "; ".join(problems)
            + f". Either install it ({INSTALL_BOTH}) or {NO_PROVIDER_HINT}."
        )
    return {"default": config}


def _format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        kind = err["type"]
        if kind == "extra_forbidden":
            hint = "unknown key; check its spelling against docs/configuration.md"
        elif kind == "missing":
            hint = "this key is required"
        else:
            hint = err["msg"]
        lines.append(f"  {path}: {hint}")
    return "\n".join(lines)


def with_prompt_files(settings: Settings, base_dir: Path) -> Settings:
    """``settings`` with the text of every ``system_prompt_file`` (``[agent]``'s and each
    profile's) read into its ``system_prompt``, relative to ``base_dir``."""
    update: dict[str, object] = {}
    if settings.agent.system_prompt_file:
        text = read_prompt_file(
            "agent.system_prompt_file", settings.agent.system_prompt_file, base_dir
        )
        update["agent"] = settings.agent.model_copy(update={"system_prompt": text})
    profiles = dict(settings.agents)
    for name, profile in settings.agents.items():
        if profile.system_prompt_file:
            where = f"agents.{name}.system_prompt_file"
            text = read_prompt_file(where, profile.system_prompt_file, base_dir)
            profiles[name] = profile.model_copy(update={"system_prompt": text})
    if profiles != settings.agents:
        update["agents"] = profiles
    return settings.model_copy(update=update) if update else settings


def parse_settings(
    data: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    source: str = "configuration",
    require_provider: bool = True,
    config_dir: Path | None = None,
) -> Settings:
    """Validate a config mapping, apply environment overrides and check references.
    ``system_prompt_file`` paths are read relative to ``config_dir`` (the config file's
    directory), or the state directory when there is no file."""
    env = os.environ if environ is None else environ
    raw = dict(data)
    if env.get("HATCHWAY_STATE_DIR"):
        raw["state_dir"] = env["HATCHWAY_STATE_DIR"]
    if not raw.get("providers"):
        implicit = _provider_from_env(env)
        if not implicit and require_provider:
            implicit = _embedded_default(str(raw.get("state_dir", ".")))
        if implicit:
            raw["providers"] = {k: v.model_dump() for k, v in implicit.items()}
    elif env.get("HATCHWAY_MODEL"):
        # The model may be overridden from the environment for the primary provider.
        providers = {k: dict(v) for k, v in raw["providers"].items()}
        agent = raw.get("agent") or {}
        primary = agent.get("provider", "default") if isinstance(agent, Mapping) else "default"
        if primary in providers:
            providers[primary]["model"] = env["HATCHWAY_MODEL"]
        raw["providers"] = providers
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_format_validation_error(exc, source)) from None
    settings = with_prompt_files(settings, config_dir or Path(settings.state_dir))
    if require_provider:
        if not settings.providers:
            raise ConfigError(f"no LLM provider is configured: {NO_PROVIDER_HINT}")
        primary_cfg = settings.providers.get(settings.agent.provider)
        if primary_cfg is None:
            raise ConfigError(
                f"agent.provider is {settings.agent.provider!r} but [providers] has "
                f"{sorted(settings.providers)}; set agent.provider to one of them"
            )
        chains = (settings.agent_for(agent) for agent in settings.agent_names())
        for name in dict.fromkeys(n for c in chains for n in [c.provider, *c.fallback]):
            cfg = settings.providers[name]
            if not cfg.model:
                raise ConfigError(
                    f"providers.{name}.model is empty: set it in hatchway.toml or "
                    "HATCHWAY_MODEL in the environment"
                )
    return settings


def load_settings(
    path: str | Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    require_provider: bool = True,
) -> Settings:
    """Load ``hatchway.toml`` (or no file: defaults plus environment)."""
    data: dict[str, Any] = {}
    source = "the environment"
    config_dir: Path | None = None
    if path is not None:
        # tomllib is imported only when a file is read: parse_settings, and most modules
        # that import bot.config, never need it.
        import tomllib

        file = Path(path)
        source = str(file)
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"config file {file} does not exist") from None
        except OSError as exc:
            raise ConfigError(f"config file {file} cannot be read: {exc.strerror}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file} is not valid TOML: {exc}") from None
        config_dir = file.resolve().parent
        if "state_dir" not in data:
            data["state_dir"] = str(config_dir)
    return parse_settings(
        data,
        environ=environ,
        source=source,
        require_provider=require_provider,
        config_dir=config_dir,
    )


def resolve_config_path(
    explicit: str | None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The config file to use: ``--config``, else ``$HATCHWAY_CONFIG``, else
    ``./hatchway.toml`` when it exists, else None (defaults plus environment)."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit)
    if env.get("HATCHWAY_CONFIG"):
        return Path(env["HATCHWAY_CONFIG"])
    local = Path("hatchway.toml")
    return local if local.exists() else None
