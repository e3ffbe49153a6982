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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bot.errors import ConfigError


class _Model(BaseModel):
    # Schemas are built on first validation: a model only ever nested in Settings is then
    # built once, inside Settings' schema, instead of once on its own as well (start-up).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class AgentConfig(_Model):
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


class ProviderConfig(_Model):
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


class ApprovalConfig(_Model):
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


class ApprovalOverride(_Model):
    """Per-channel overrides of the approval policy; unset fields inherit."""

    level: Literal["readonly", "supervised", "full"] | None = None
    auto_approve: list[str] | None = None
    always_ask: list[str] | None = None
    deny: list[str] | None = None
    self_approval: bool | None = None


class StorageConfig(_Model):
    path: str = "hatchway.db"


class ServerConfig(_Model):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)


class ChannelCommon(_Model):
    enabled: bool = True
    allowed_users: list[str] = Field(default_factory=list)
    approvers: list[str] = Field(default_factory=list)
    approver_roles: list[str] = Field(default_factory=list)
    dm_policy: Literal["allowlist", "pairing", "open", "disabled"] = "allowlist"
    group_policy: Literal["allowlist", "open", "disabled"] = "open"
    allowed_conversations: list[str] = Field(default_factory=list)
    require_mention: bool = True
    thread_counts_as_mention: bool = True
    session_per_user_in_groups: bool = False
    ignore_other_bots: bool = True
    reactions_for_approval: bool = False
    excluded_tools: list[str] = Field(default_factory=list)
    approval: ApprovalOverride = Field(default_factory=ApprovalOverride)


class ConsoleChannelConfig(ChannelCommon):
    allowed_users: list[str] = Field(default_factory=lambda: ["*"])
    dm_policy: Literal["allowlist", "pairing", "open", "disabled"] = "open"
    require_mention: bool = False


class TelegramChannelConfig(ChannelCommon):
    token_env: str = "HATCHWAY_TELEGRAM_TOKEN"
    api_base_url: str = "https://api.telegram.org/bot"
    file_base_url: str = "https://api.telegram.org/file/bot"
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = 8443
    webhook_path: str = "/telegram"
    webhook_secret_env: str = "HATCHWAY_TELEGRAM_WEBHOOK_SECRET"
    poll_timeout_s: int = Field(default=30, ge=0)
    reconnect_initial_s: float = Field(default=1.0, gt=0)
    reconnect_max_s: float = Field(default=60.0, gt=0)
    retry_after_max_s: float = Field(default=60.0, ge=0)
    send_attempts: int = Field(default=3, ge=1, le=10)


class SlackChannelConfig(ChannelCommon):
    bot_token_env: str = "HATCHWAY_SLACK_BOT_TOKEN"
    app_token_env: str = "HATCHWAY_SLACK_APP_TOKEN"
    signing_secret_env: str = "HATCHWAY_SLACK_SIGNING_SECRET"
    api_base_url: str = "https://slack.com/api/"
    mode: Literal["socket", "http"] = "socket"
    events_path: str = "/slack/events"
    max_message_chars: int = Field(default=3000, ge=200, le=39_000)
    dm_replies_in_thread: bool = False
    user_cache_ttl_s: float = Field(default=600.0, ge=0)
    rate_limit_retries: int = Field(default=3, ge=0, le=10)
    ping_interval_s: float = Field(default=10.0, gt=0)
    reconnect_base_s: float = Field(default=1.0, gt=0)
    reconnect_max_s: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _no_roles(self) -> SlackChannelConfig:
        # A Slack click carries no roles, so approver_roles could never match: a key that
        # silently does nothing would leave a team believing its approvers are set.
        if self.approver_roles:
            raise ValueError(
                "approver_roles is not supported on Slack (a Slack click carries no roles); "
                "list the approvers' Slack user ids (U…) in approvers instead"
            )
        return self


class DiscordChannelConfig(ChannelCommon):
    token_env: str = "HATCHWAY_DISCORD_TOKEN"
    api_base_url: str | None = None
    gateway_url: str | None = None
    allowed_guilds: list[str] = Field(default_factory=list)
    thread_per_request: bool = False
    guild_ready_timeout_s: float = Field(default=2.0, gt=0)


class ChannelsConfig(_Model):
    console: dict[str, ConsoleChannelConfig] = Field(default_factory=dict)
    telegram: dict[str, TelegramChannelConfig] = Field(default_factory=dict)
    slack: dict[str, SlackChannelConfig] = Field(default_factory=dict)
    discord: dict[str, DiscordChannelConfig] = Field(default_factory=dict)

    def all(self) -> list[tuple[str, str, ChannelCommon]]:
        """Every configured channel as ``(kind, alias, config)``."""
        out: list[tuple[str, str, ChannelCommon]] = []
        for kind in ("console", "telegram", "slack", "discord"):
            section: Mapping[str, ChannelCommon] = getattr(self, kind)
            out.extend((kind, alias, cfg) for alias, cfg in section.items())
        return out

    def get(self, kind: str, alias: str) -> ChannelCommon | None:
        section: Mapping[str, ChannelCommon] = getattr(self, kind, {})
        return section.get(alias)


class WorkspaceConfig(_Model):
    path: str = "workspace"
    allow_sensitive_files: bool = False


class FileToolsConfig(_Model):
    enabled: bool = True
    max_read_bytes: int = Field(default=256_000, ge=1000)
    max_write_bytes: int = Field(default=1_000_000, ge=1000)
    max_list_entries: int = Field(default=500, ge=1)
    max_search_results: int = Field(default=100, ge=1)
    max_output_chars: int = Field(default=20_000, ge=100)


class ShellToolConfig(_Model):
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


class HttpFetchToolConfig(_Model):
    enabled: bool = True
    timeout_s: float = Field(default=20.0, gt=0)
    max_bytes: int = Field(default=2_000_000, ge=1000)
    allow_hosts: list[str] = Field(default_factory=list)
    max_output_chars: int = Field(default=20_000, ge=100)


class MemoryToolConfig(_Model):
    enabled: bool = True
    scope: Literal["channel", "conversation"] = "channel"
    max_note_chars: int = Field(default=4000, ge=100)


class ToolsConfig(_Model):
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    files: FileToolsConfig = Field(default_factory=FileToolsConfig)
    shell: ShellToolConfig = Field(default_factory=ShellToolConfig)
    http_fetch: HttpFetchToolConfig = Field(default_factory=HttpFetchToolConfig)
    memory: MemoryToolConfig = Field(default_factory=MemoryToolConfig)


class McpServerConfig(_Model):
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
    restart_initial_s: float = Field(default=1.0, gt=0)
    restart_max_s: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("set exactly one of command (stdio) or url (streamable HTTP)")
        return self


class McpToolFilterGroup(_Model):
    """MCP tools (``server__tool`` names or fnmatch patterns) offered ``always``, or only
    when a ``keyword`` appears in the message (``mode = "keyword"``)."""

    mode: Literal["always", "keyword"] = "always"
    tools: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)


class McpConfig(_Model):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    deferred_threshold: int = Field(default=20, ge=0)
    tool_filter_groups: list[McpToolFilterGroup] = Field(default_factory=list)
    search_limit: int = Field(default=5, ge=1, le=50)


class SchedulesConfig(_Model):
    enabled: bool = True
    missed_run_policy: Literal["skip", "run_once"] = "run_once"
    tick_s: float = Field(default=1.0, gt=0)
    max_jobs_per_conversation: int = Field(default=20, ge=1)
    misfire_grace_s: float = Field(default=60.0, ge=0)


class LoggingConfig(_Model):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


def _default_providers() -> dict[str, ProviderConfig]:
    return {}


class Settings(_Model):
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
