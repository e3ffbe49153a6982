"""``Settings``: the whole of ``hatchway.toml``, and the core's own tables.

``[agent]``, ``[providers.<name>]``, ``[approval]``, ``[storage]``, ``[server]``,
``[schedules]`` and ``[logging]`` are here; ``[channels]``, ``[tools]``, ``[mcp]`` and
``[agents]`` have modules of their own in this package. :class:`Settings` checks what the
tables say of each other (the providers each agent names, the agent each channel names) and
resolves an agent profile over ``[agent]`` (:meth:`Settings.agent_for`); reading the file and
the environment is :mod:`bot.config.loading`'s.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from bot.channel_config import (
    ApprovalLevel,
    GrantChoice,
    GrantScope,
    NameApprovers,
    QuorumConfig,
    ToolApproval,
    check_grant_choices,
    default_grant_choices,
)
from bot.config.agents import (
    DEFAULT_AGENT,
    AgentProfile,
    HistoryTokens,
    Language,
    MaxTokens,
    Seconds,
    Temperature,
    ToolIterations,
    ToolResultChars,
    check_agent_name,
    exclusive_prompt,
)
from bot.config.attachments import AttachmentsConfig
from bot.config.channels import ChannelsConfig
from bot.config.embedded import PACKAGED_MODEL_NAME, packaged_model_path
from bot.config.limits import RateLimitsConfig
from bot.config.mcp import McpConfig
from bot.config.replicas import ReplicasConfig
from bot.config.retention import RetentionConfig
from bot.config.telemetry import TelemetryConfig
from bot.config.tools import ToolsConfig
from bot.config.transcription import TranscriptionConfig
from bot.config.usage import BudgetsConfig, ModelPrice
from bot.config.web import WebConfig
from bot.config_model import ConfigModel
from bot.timezones import find_zone


class OnInterrupted(enum.StrEnum):
    """``[agent] on_interrupted``: what becomes of a turn cut off by a crash or a stop."""

    #: its sender is told to ask again
    NOTIFY = "notify"
    #: it runs again once when nothing with side effects ran in it
    RETRY = "retry"


class AgentConfig(ConfigModel):
    """``[agent]``: the agent named ``default``, and what every ``[agents.<name>]``
    inherits. ``temperature`` and ``max_tokens``, when set, replace the providers' own;
    ``allowed_tools`` (unset: every tool) and ``excluded_tools`` take tool names, shell-style
    patterns and ``mcp:<server>`` (see :mod:`bot.agent.tool_filter`)."""

    provider: str = "default"
    fallback: list[str] = Field(default=[])
    system_prompt: str = "You are the team's assistant. Be brief and accurate."
    system_prompt_file: str | None = None
    temperature: Temperature | None = None
    max_tokens: MaxTokens | None = None
    allowed_tools: list[str] | None = None
    max_tool_iterations: ToolIterations = 10
    parallel_tools: bool = True
    max_tool_result_chars: ToolResultChars = 50_000
    turn_timeout_s: Seconds = 300.0
    max_concurrent_turns: int = Field(default=32, ge=1)
    history_max_tokens: HistoryTokens = 24_000
    excluded_tools: list[str] = Field(default=[])
    hide_unapprovable_tools: bool = False
    tool_timeout_s: Seconds = 120.0
    receipts: bool = False
    receipt_key_env: str = "HATCHWAY_RECEIPT_KEY"
    on_interrupted: OnInterrupted = OnInterrupted.NOTIFY
    #: The language hint for this agent's voice notes (unset: ``transcription.language``).
    transcription_language: Language | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_prompt(cls, data: object) -> object:
        return exclusive_prompt(data)


#: Keys only a provider of ``kind = "embedded"`` reads.
EMBEDDED_ONLY_KEYS = ("model_path", "context_tokens", "threads", "slots")
#: ``max_tokens`` of an embedded provider that sets none: a small model on a few cores.
EMBEDDED_MAX_TOKENS = 512


class ProviderConfig(ConfigModel):
    """One ``[providers.<name>]`` table.

    ``kind = "embedded"`` is llama.cpp in this process (:mod:`bot.config.embedded`): no
    endpoint and no key. When it names no ``model_path`` the packaged SmolLM2 GGUF is filled
    in at validation (``None`` when that is not installed, which the provider's start-up check
    reports), so ``model_path`` always says which file an embedded provider runs.
    """

    kind: Literal["openai", "anthropic", "embedded"] = "openai"
    base_url: str | None = None
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    tool_mode: Literal["native", "text", "off", "auto"] = "auto"
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    max_tokens: int = Field(default=4096, ge=1)
    stream: bool = False
    temperature: float | None = None
    system_prompt: str | None = None
    images: bool | None = None
    model_path: str | None = None
    context_tokens: int = Field(default=2048, ge=256, le=131_072)
    threads: int | None = Field(default=None, ge=1, le=256)
    slots: int = Field(default=1, ge=1, le=16)

    @model_validator(mode="before")
    @classmethod
    def _embedded_defaults(cls, data: object) -> object:
        if not isinstance(data, Mapping) or data.get("kind") != "embedded":
            return data
        table = dict(data)
        given = table.get("model_path")
        if not given:
            packaged = packaged_model_path()
            table["model_path"] = str(packaged) if packaged is not None else None
        if not table.get("model"):
            table["model"] = Path(str(given)).stem if given else PACKAGED_MODEL_NAME
        table.setdefault("max_tokens", EMBEDDED_MAX_TOKENS)
        return table

    @model_validator(mode="after")
    def _kind_keys(self) -> ProviderConfig:
        if self.kind == "embedded":
            if self.tool_mode == "native":
                raise ValueError(
                    'tool_mode "native" is not available for kind "embedded" (its replies '
                    'carry no tool calls): use "off" or "text"'
                )
            if self.base_url is not None:
                raise ValueError('base_url is not read for kind "embedded"; use model_path')
            if self.images:
                raise ValueError(
                    'images = true is not available for kind "embedded" (it reads text only)'
                )
            return self
        fields = type(self).model_fields
        stray = [k for k in EMBEDDED_ONLY_KEYS if getattr(self, k) != fields[k].default]
        if stray:
            raise ValueError(f'{", ".join(stray)} only apply to kind = "embedded"')
        return self


class ApprovalConfig(ConfigModel):
    level: ApprovalLevel = "supervised"
    auto_approve: list[str] = Field(
        default_factory=lambda: [
            "current_time",
            "calculator",
            "file_read",
            "file_list",
            "file_search",
            "view_attachment",
            "memory_recall",
        ]
    )
    always_ask: list[str] = Field(default=[])
    deny: list[str] = Field(default=[])
    #: The card's life (docs/approvals.md); a day since parking (an upgrade note says so).
    timeout_s: float = Field(default=86_400.0, gt=0)
    #: How long a turn waits on a card in its coroutine before it parks; never longer than
    #: ``timeout_s`` (when both are set, a larger one is refused).
    wait_in_turn_s: float = Field(default=300.0, gt=0)
    #: Park turns that wait on a card (false: today's rules, a stop expires the card).
    park: bool = True
    self_approval: bool = False
    grant_scope: GrantScope = "conversation"
    grant_ttl_s: float | None = None
    #: The sizes of yes a card offers besides Always (docs/approvals.md).
    grant_choices: list[GrantChoice] = Field(default_factory=default_grant_choices)
    dm_approvers: bool = False
    #: Reminders and escalation of an unanswered card (docs/approvals.md): off unless set.
    remind_after_s: float | None = Field(default=None, gt=0)
    remind_max: int = Field(default=3, ge=1, le=50)
    escalate_after_s: float | None = Field(default=None, gt=0)
    escalate_to: list[str] = Field(default=[], max_length=50)
    #: Roles (as ``approver_roles``) whose holders may decide an escalated card too.
    escalate_to_roles: list[str] = Field(default=[], max_length=50)
    name_approvers: NameApprovers = "members"
    #: An approver's IANA time zone (platform user id → zone): a reminder says when the
    #: request expires in it (UTC for everyone else).
    approver_zones: dict[str, str] = Field(default={})
    #: Per tool (name or shell-style pattern): its own settings, over the keys above.
    tools: dict[str, ToolApproval] = Field(default={})
    #: The calls that need several approvers (docs/approvals.md, "Two keys").
    quorum: QuorumConfig = Field(default_factory=QuorumConfig)

    _grant_choices = field_validator("grant_choices")(check_grant_choices)

    @model_validator(mode="after")
    def _check_reminders(self) -> ApprovalConfig:
        if {"timeout_s", "wait_in_turn_s"} <= self.model_fields_set and (
            self.wait_in_turn_s > self.timeout_s
        ):
            raise ValueError(
                f"approval.wait_in_turn_s ({self.wait_in_turn_s:g}) is longer than the card's "
                f"life, approval.timeout_s ({self.timeout_s:g})"
            )
        if self.escalate_after_s is not None and not (self.escalate_to or self.escalate_to_roles):
            raise ValueError(
                "approval.escalate_after_s needs approval.escalate_to (approver ids) or "
                "approval.escalate_to_roles"
            )
        for user, zone in self.approver_zones.items():
            if find_zone(zone) is None:
                raise ValueError(
                    f"approval.approver_zones.{user}: {zone!r} is not an IANA time zone "
                    "(e.g. Europe/Paris)"
                )
        return self


class StorageConfig(ConfigModel):
    """``[storage]``: the SQLite file ``path`` (the default), or a PostgreSQL database
    (``url``, the password in the environment variable ``password_env`` names), which
    several replicas can share."""

    path: str = "hatchway.db"
    url: str | None = None
    password_env: str = "HATCHWAY_DB_PASSWORD"
    pool_size: int = Field(default=10, ge=1, le=100)
    #: how long one statement (or the opening of a connection) may take before it fails
    #: as the database being unreachable: a server that hangs fails turns, it never
    #: holds them
    command_timeout_s: float = Field(default=30.0, gt=0, le=3600)
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)

    @model_validator(mode="after")
    def _check_url(self) -> StorageConfig:
        if self.url is None:
            return self
        parts = urlsplit(self.url)
        on_socket = "host=" in parts.query  # postgresql:///db?host=/var/run/postgresql
        if parts.scheme not in ("postgresql", "postgres") or not (parts.hostname or on_socket):
            raise ValueError(
                "storage.url must be a PostgreSQL URL, postgresql://user@host:port/database "
                "(leave it out to use the SQLite file storage.path)"
            )
        try:
            parts.port  # noqa: B018 - a port that is not a number fails only when read
        except ValueError:
            raise ValueError(
                "storage.url has no valid port: postgresql://user@host:5432/database"
            ) from None
        if parts.password is not None or "password=" in parts.query.lower():
            raise ValueError(
                "storage.url must not hold the password: put it in the environment variable "
                f"storage.password_env names ({self.password_env})"
            )
        return self


class ServerConfig(ConfigModel):
    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(default=8787, ge=0, le=65535)


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
    rate_limits: RateLimitsConfig = Field(default_factory=RateLimitsConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    attachments: AttachmentsConfig = Field(default_factory=AttachmentsConfig)
    transcription: TranscriptionConfig = Field(default_factory=TranscriptionConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    replicas: ReplicasConfig = Field(default_factory=ReplicasConfig)
    agents: dict[str, AgentProfile] = Field(default={})
    pricing: dict[str, ModelPrice] = Field(default={})
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    state_dir: str = "."

    @model_validator(mode="after")
    def _check_references(self) -> Settings:
        for name in self.agents:
            check_agent_name(name)
        if self.providers:
            for agent in self.agent_names():
                where = "agent" if agent == DEFAULT_AGENT else f"agents.{agent}"
                config = self.agent_for(agent)
                for name in [config.provider, *config.fallback]:
                    if name not in self.providers:
                        raise ValueError(
                            f"{where}.provider/fallback names provider {name!r}, but "
                            f"[providers] defines only {sorted(self.providers)}"
                        )
        agents = self.agent_names()
        for kind, alias, channel in self.channels.all():
            if channel.agent not in agents:
                raise ValueError(
                    f"channels.{kind}.{alias}.agent names agent {channel.agent!r}, but the "
                    f"agents are {agents} (add [agents.{channel.agent}] or fix the name)"
                )
        return self

    def agent_names(self) -> list[str]:
        """``default`` first, then every ``[agents.<name>]`` in file order."""
        return [DEFAULT_AGENT, *(n for n in self.agents if n != DEFAULT_AGENT)]

    def agent_for(self, name: str) -> AgentConfig:
        """Agent ``name``'s settings: ``[agent]`` with its profile's keys over it (the
        ``default`` agent's profile, ``[agents.default]``, is optional)."""
        profile = self.agents.get(name)
        if profile is None:
            if name != DEFAULT_AGENT:
                raise KeyError(name)
            return self.agent
        overrides = profile.overrides()
        if not overrides:
            return self.agent
        if "system_prompt_file" not in overrides and "system_prompt" in overrides:
            overrides["system_prompt_file"] = None  # an inline prompt replaces [agent]'s file
        return self.agent.model_copy(update=overrides)

    def as_agent(self, name: str) -> Settings:
        """The settings as agent ``name`` runs with them: its settings in place of
        ``[agent]``, and the providers of its chain with its ``temperature`` and
        ``max_tokens`` when it sets them (what the provider factory builds its chain from)."""
        agent = self.agent_for(name)
        if agent is self.agent and agent.temperature is None and agent.max_tokens is None:
            return self
        tuned: dict[str, object] = {}
        if agent.temperature is not None:
            tuned["temperature"] = agent.temperature
        if agent.max_tokens is not None:
            tuned["max_tokens"] = agent.max_tokens
        providers = dict(self.providers)
        if tuned:
            for provider in [agent.provider, *agent.fallback]:
                if provider in providers:
                    providers[provider] = providers[provider].model_copy(update=tuned)
        return self.model_copy(update={"agent": agent, "providers": providers})

    @model_validator(mode="after")
    def _check_budgets(self) -> Settings:
        """A budget names an agent and a channel that exist (the implicit ``console.main``
        of a configuration without channels counts as one)."""
        agents = self.agent_names()
        for name in self.budgets.agents:
            if name not in agents:
                raise ValueError(f"budgets.agents.{name} names no agent; the agents are {agents}")
        channels = {f"{kind}.{alias}" for kind, alias, _ in self.channels.all()} or {"console.main"}
        for name in self.budgets.channels:
            if name not in channels:
                raise ValueError(
                    f'budgets.channels."{name}" names no configured channel; the channels '
                    f"are {sorted(channels)}"
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


def demo_model_warning(settings: Settings) -> str | None:
    """A sentence when the packaged demo model is in an agent's provider chain while a chat
    channel (any kind but the console) is enabled: a team would be answered by a 135M model
    with tools off (a configuration with channels and no ``[providers]`` gets it silently).
    ``hatchway run`` logs it at start, ``/readyz`` lists it under ``warnings`` (it does not
    make the daemon unready) and the console's health page shows it; None otherwise."""
    chats = [
        f"{kind}.{alias}"
        for kind, alias, channel in settings.channels.all()
        if kind != "console" and channel.enabled
    ]
    if not chats:
        return None
    chains = (settings.agent_for(agent) for agent in settings.agent_names())
    names = dict.fromkeys(n for chain in chains for n in [chain.provider, *chain.fallback])
    demo = [
        f"providers.{name}"
        for name in names
        if (config := settings.providers.get(name)) is not None
        and config.kind == "embedded"
        and config.model == PACKAGED_MODEL_NAME
    ]
    if not demo:
        return None
    return (
        f"the embedded demo model ({PACKAGED_MODEL_NAME}: small, offline, tools off) answers "
        f"on {', '.join(chats)} ({', '.join(demo)}); for a team, configure a provider with an "
        "endpoint in [providers] (docs/providers.md)"
    )
