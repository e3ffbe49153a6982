"""Configuration: pydantic models of ``hatchway.toml`` plus environment overrides.

Secrets never live in the file: a config names the environment variable that holds each one
(``token_env = "HATCHWAY_TELEGRAM_TOKEN"``) and :meth:`Settings.secret` reads it. Unknown keys
and wrong types fail at load with the key's dotted path and a hint.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import GenericAlias
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, ValidationError, create_model, model_validator

from bot.channel_config import ApprovalOverride as ApprovalOverride
from bot.channel_config import ChannelCommon as ChannelCommon
from bot.channel_registry import config_models
from bot.config_model import ConfigModel, Reconnecting, renamed_tables
from bot.errors import ConfigError


class AgentConfig(ConfigModel):
    provider: str = "default"
    fallback: list[str] = Field(default_factory=list)
    system_prompt: str = "You are the team's assistant. Be brief and accurate."
    max_tool_iterations: int = Field(default=10, ge=1, le=200)
    parallel_tools: bool = True
    max_tool_result_chars: int = Field(default=50_000, ge=200)
    turn_timeout_s: float = Field(default=300.0, gt=0)
    max_concurrent_turns: int = Field(default=32, ge=1)
    history_max_tokens: int = Field(default=24_000, ge=500)
    excluded_tools: list[str] = Field(default_factory=list)
    hide_unapprovable_tools: bool = False
    tool_timeout_s: float = Field(default=120.0, gt=0)
    receipts: bool = False
    receipt_key_env: str = "HATCHWAY_RECEIPT_KEY"


class ProviderConfig(ConfigModel):
    kind: Literal["openai", "anthropic"] = "openai"
    base_url: str | None = None
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    tool_mode: Literal["native", "text", "auto"] = "auto"
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    max_tokens: int = Field(default=4096, ge=1)
    stream: bool = False
    temperature: float | None = None


class ApprovalConfig(ConfigModel):
    level: Literal["readonly", "supervised", "full"] = "supervised"
    auto_approve: list[str] = Field(
        default_factory=lambda: [
            "current_time",
            "calculator",
            "file_read",
            "file_list",
            "file_search",
            "memory_recall",
        ]
    )
    always_ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    timeout_s: float = Field(default=300.0, gt=0)
    self_approval: bool = False
    grant_scope: Literal["conversation", "channel", "global"] = "conversation"
    grant_ttl_s: float | None = None
    dm_approvers: bool = False


class StorageConfig(ConfigModel):
    path: str = "hatchway.db"


class ServerConfig(ConfigModel):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)


_CHANNEL_MODELS = config_models()


class _ChannelSections(ConfigModel):
    """``[channels.<kind>.<alias>]`` tables. Its fields, one ``alias → model`` section per
    kind, are made from :mod:`bot.channel_registry` (see :data:`ChannelsConfig`)."""

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: object) -> object:
        if not isinstance(data, Mapping):
            return data
        return {
            kind: renamed_tables(
                section, _CHANNEL_MODELS.get(kind, ConfigModel), f"channels.{kind}"
            )
            for kind, section in data.items()
        }

    def all(self) -> list[tuple[str, str, ChannelCommon]]:
        """Every configured channel as ``(kind, alias, config)``, kinds in registry order."""
        out: list[tuple[str, str, ChannelCommon]] = []
        for kind in type(self).model_fields:
            section: Mapping[str, ChannelCommon] = getattr(self, kind)
            out.extend((kind, alias, cfg) for alias, cfg in section.items())
        return out

    def get(self, kind: str, alias: str) -> ChannelCommon | None:
        section: Mapping[str, ChannelCommon] = getattr(self, kind, {})
        return section.get(alias)

    @classmethod
    def embedded_console(cls) -> Self:
        """Only ``console.main`` with the console's defaults: the channel ``hatchway run``
        and ``hatchway chat`` use when no other is configured."""
        return cls.model_validate({"console": {"main": {}}})


def _channels_model() -> type[_ChannelSections]:
    sections: dict[str, Any] = {
        kind: (GenericAlias(dict, (str, model)), Field(default_factory=dict))
        for kind, model in _CHANNEL_MODELS.items()
    }
    return create_model(
        "ChannelsConfig",
        __base__=_ChannelSections,
        __module__=__name__,
        __doc__=_ChannelSections.__doc__,
        **sections,
    )


if TYPE_CHECKING:
    ChannelsConfig = _ChannelSections
else:
    #: ``[channels]``: a pydantic model with one field per registered kind, built once here so
    #: that the list of kinds is written only in :data:`bot.channel_registry.CHANNEL_PACKAGES`;
    #: validation errors name the key as ``channels.<kind>.<alias>.<key>``.
    ChannelsConfig = _channels_model()


class WorkspaceConfig(ConfigModel):
    path: str = "workspace"
    allow_sensitive_files: bool = False


class FileToolsConfig(ConfigModel):
    enabled: bool = True
    max_read_bytes: int = Field(default=256_000, ge=1000)
    max_write_bytes: int = Field(default=1_000_000, ge=1000)
    max_list_entries: int = Field(default=500, ge=1)
    max_search_results: int = Field(default=100, ge=1)
    max_output_chars: int = Field(default=20_000, ge=100)


class ShellToolConfig(ConfigModel):
    """``[tools.shell]``. ``env_passthrough`` names the daemon's variables a command may see
    beyond the base set (exact names or ``*`` globs such as ``PIP_*``; see docs/tools.md)."""

    enabled: bool = True
    timeout_s: float = Field(default=60.0, gt=0)
    max_output_chars: int = Field(default=20_000, ge=100)
    deny_patterns: list[str] = Field(default_factory=list)
    env_passthrough: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _variable_names(self) -> ShellToolConfig:
        for index, entry in enumerate(self.env_passthrough):
            plain = entry.replace("*", "")
            if not (entry.replace("*", "_").isidentifier() and entry.isascii()) or not plain:
                raise ValueError(
                    f"env_passthrough[{index}] = {entry!r} is not a variable name (letters, "
                    "digits and _, with * as a glob; a lone * would pass the whole environment)"
                )
        return self


class HttpFetchToolConfig(ConfigModel):
    enabled: bool = True
    timeout_s: float = Field(default=20.0, gt=0)
    max_bytes: int = Field(default=2_000_000, ge=1000)
    allow_hosts: list[str] = Field(default_factory=list)
    max_output_chars: int = Field(default=20_000, ge=100)


class MemoryToolConfig(ConfigModel):
    enabled: bool = True
    scope: Literal["channel", "conversation"] = "channel"
    max_note_chars: int = Field(default=4000, ge=100)


class ToolsConfig(ConfigModel):
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    files: FileToolsConfig = Field(default_factory=FileToolsConfig)
    shell: ShellToolConfig = Field(default_factory=ShellToolConfig)
    http_fetch: HttpFetchToolConfig = Field(default_factory=HttpFetchToolConfig)
    memory: MemoryToolConfig = Field(default_factory=MemoryToolConfig)


class McpServerConfig(Reconnecting):
    """One MCP server: a stdio ``command`` or a streamable-HTTP ``url`` (see docs/mcp.md).

    ``env`` holds plain values for the server process; ``env_from`` maps a server variable to
    the daemon's environment variable that holds its (secret) value. ``headers_from`` does
    the same for HTTP headers. Secret values are never logged."""

    command: list[str] = Field(default_factory=list)
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    requires_approval: bool = True
    auto_approve: list[str] = Field(default_factory=list)
    enabled: bool = True
    env_from: dict[str, str] = Field(default_factory=dict)
    headers_from: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    call_timeout_s: float = Field(default=60.0, gt=0)
    ping_interval_s: float = Field(default=15.0, gt=0)

    # One spelling for the backoff keys of every channel and MCP server (until the next
    # release the old names still load, with a warning).
    renamed_keys: ClassVar[Mapping[str, str]] = {
        "restart_initial_s": "reconnect_initial_s",
        "restart_max_s": "reconnect_max_s",
    }

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of command (stdio) or url (streamable HTTP)")
        return self


class McpToolFilterGroup(ConfigModel):
    """MCP tools (``server__tool`` names or fnmatch patterns) offered ``always``, or only
    when a ``keyword`` appears in the message (``mode = "keyword"``)."""

    mode: Literal["always", "keyword"] = "always"
    tools: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class McpConfig(ConfigModel):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    deferred_threshold: int = Field(default=20, ge=0)
    tool_filter_groups: list[McpToolFilterGroup] = Field(default_factory=list)
    search_limit: int = Field(default=5, ge=1, le=50)

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: object) -> object:
        if not isinstance(data, Mapping) or "servers" not in data:
            return data
        servers = renamed_tables(data["servers"], McpServerConfig, "mcp.servers")
        return {**data, "servers": servers}


class SchedulesConfig(ConfigModel):
    enabled: bool = True
    missed_run_policy: Literal["skip", "run_once"] = "run_once"
    tick_s: float = Field(default=1.0, gt=0)
    max_jobs_per_conversation: int = Field(default=20, ge=1)
    misfire_grace_s: float = Field(default=60.0, ge=0)


class LoggingConfig(ConfigModel):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


def _default_providers() -> dict[str, ProviderConfig]:
    return {}


class Settings(ConfigModel):
    """The whole configuration. Build with :func:`load_settings`."""

    agent: AgentConfig = Field(default_factory=AgentConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=_default_providers)
    approval: ApprovalConfig = Field(default_factory=ApprovalConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    schedules: SchedulesConfig = Field(default_factory=SchedulesConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    state_dir: str = "."

    @model_validator(mode="after")
    def _check_references(self) -> Settings:
        names = [self.agent.provider, *self.agent.fallback]
        if self.providers:
            for name in names:
                if name not in self.providers:
                    raise ValueError(
                        f"agent.provider/fallback names provider {name!r}, but [providers] "
                        f"defines only {sorted(self.providers)}"
                    )
        return self

    def database_path(self) -> Path:
        path = Path(self.storage.path)
        return path if path.is_absolute() else Path(self.state_dir) / path

    @staticmethod
    def secret(env_name: str, environ: Mapping[str, str] | None = None) -> str | None:
        """Read a secret from the environment by the variable name the config gives."""
        value = (os.environ if environ is None else environ).get(env_name, "")
        return value or None


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
    "no LLM provider is configured. Set OPENAI_BASE_URL (and OPENAI_API_KEY if the endpoint "
    "needs one) and HATCHWAY_MODEL, or ANTHROPIC_API_KEY, or add a [providers.default] table "
    "to hatchway.toml (see docs/configuration.md)."
)


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


def parse_settings(
    data: Mapping[str, Any],
    *,
    environ: Mapping[str, str] | None = None,
    source: str = "configuration",
    require_provider: bool = True,
) -> Settings:
    """Validate a config mapping, apply environment overrides and check references."""
    env = os.environ if environ is None else environ
    raw = dict(data)
    if env.get("HATCHWAY_STATE_DIR"):
        raw["state_dir"] = env["HATCHWAY_STATE_DIR"]
    if not raw.get("providers"):
        implicit = _provider_from_env(env)
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
    if require_provider:
        if not settings.providers:
            raise ConfigError(NO_PROVIDER_HINT)
        primary_cfg = settings.providers.get(settings.agent.provider)
        if primary_cfg is None:
            raise ConfigError(
                f"agent.provider is {settings.agent.provider!r} but [providers] has "
                f"{sorted(settings.providers)}; set agent.provider to one of them"
            )
        for name in [settings.agent.provider, *settings.agent.fallback]:
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
    if path is not None:
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
        if "state_dir" not in data:
            data["state_dir"] = str(file.resolve().parent)
    return parse_settings(data, environ=environ, source=source, require_provider=require_provider)


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
