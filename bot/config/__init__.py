"""Configuration: pydantic models of ``hatchway.toml`` plus environment overrides.

Secrets never live in the file: a config names the environment variable that holds each one
(``token_env = "HATCHWAY_TELEGRAM_TOKEN"``) and :meth:`Settings.secret` reads it. Unknown keys
and wrong types fail at load with the key's dotted path and a hint.

One module per part of the file; import the names from ``bot.config``:

* :mod:`~bot.config.settings`: :class:`Settings`, the whole file, and the core's tables
  (``[agent]``, ``[providers.*]``, ``[approval]``, ``[storage]``, ``[server]``,
  ``[schedules]``, ``[logging]``);
* :mod:`~bot.config.channels`: ``[channels]``, built from the registered channel models;
* :mod:`~bot.config.tools`: ``[tools]``; :mod:`~bot.config.mcp`: ``[mcp]``;
* :mod:`~bot.config.agents`: ``[agents.<name>]`` profiles and their routes;
* :mod:`~bot.config.usage`: ``[pricing."<model>"]`` and ``[budgets]``;
* :mod:`~bot.config.embedded`: where the embedded model's runtime and file come from, and
  what is missing when it cannot run;
* :mod:`~bot.config.loading`: the file, the environment's overrides, errors naming the key.

The base model and renamed keys are :mod:`bot.config_model`'s, the keys every channel shares
:mod:`bot.channel_config`'s: platform config modules import those, not this package.
"""

from __future__ import annotations

from bot.channel_config import ApprovalOverride, ChannelCommon
from bot.config.agents import DEFAULT_AGENT, AgentApproval, AgentProfile, RouteConfig
from bot.config.channels import ChannelsConfig
from bot.config.loading import (
    NO_PROVIDER_HINT,
    load_settings,
    parse_settings,
    resolve_config_path,
)
from bot.config.mcp import McpConfig, McpServerConfig, McpToolFilterGroup
from bot.config.settings import (
    AgentConfig,
    ApprovalConfig,
    LoggingConfig,
    OnInterrupted,
    ProviderConfig,
    SchedulesConfig,
    ServerConfig,
    Settings,
    StorageConfig,
)
from bot.config.tools import (
    FileToolsConfig,
    HttpFetchToolConfig,
    MemoryToolConfig,
    ShellToolConfig,
    ToolsConfig,
    WebSearchToolConfig,
    WorkspaceConfig,
)
from bot.config.usage import BudgetLimits, BudgetsConfig, ModelPrice

__all__ = [
    "DEFAULT_AGENT",
    "NO_PROVIDER_HINT",
    "AgentApproval",
    "AgentConfig",
    "AgentProfile",
    "ApprovalConfig",
    "ApprovalOverride",
    "BudgetLimits",
    "BudgetsConfig",
    "ChannelCommon",
    "ChannelsConfig",
    "FileToolsConfig",
    "HttpFetchToolConfig",
    "LoggingConfig",
    "McpConfig",
    "McpServerConfig",
    "McpToolFilterGroup",
    "MemoryToolConfig",
    "ModelPrice",
    "OnInterrupted",
    "ProviderConfig",
    "RouteConfig",
    "SchedulesConfig",
    "ServerConfig",
    "Settings",
    "ShellToolConfig",
    "StorageConfig",
    "ToolsConfig",
    "WebSearchToolConfig",
    "WorkspaceConfig",
    "load_settings",
    "parse_settings",
    "resolve_config_path",
]
