"""``[mcp]``: MCP servers (``[mcp.servers.<name>]``), which of their tools are offered, and
when the tool list is deferred behind ``tool_search``; see docs/mcp.md."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bot.config_model import ConfigModel, Reconnecting, renamed_tables


class McpServerConfig(Reconnecting):
    """One MCP server: a stdio ``command`` or a streamable-HTTP ``url`` (see docs/mcp.md).

    ``env`` holds plain values for the server process; ``env_from`` maps a server variable to
    the daemon's environment variable that holds its (secret) value. ``headers_from`` does
    the same for HTTP headers. Secret values are never logged."""

    command: list[str] = Field(default=[])
    url: str | None = None
    env: dict[str, str] = Field(default={})
    requires_approval: bool = True
    auto_approve: list[str] = Field(default=[])
    enabled: bool = True
    env_from: dict[str, str] = Field(default={})
    headers_from: dict[str, str] = Field(default={})
    cwd: str | None = None
    call_timeout_s: float = Field(default=60.0, gt=0)
    ping_interval_s: float = Field(default=15.0, gt=0)
    # the longest message read from the server (a tool result, a listing); a longer one is
    # not read, and the call it answers fails naming this cap (bot.mcp.reply_limit)
    max_result_bytes: int = Field(default=1_048_576, ge=4096, le=1_073_741_824)
    # tools offered from this server; more are dropped (in listing order) with a log line
    max_tools: int = Field(default=100, ge=1, le=1000)

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
    tools: list[str] = Field(default=[])
    keywords: list[str] = Field(default=[])


class McpConfig(ConfigModel):
    servers: dict[str, McpServerConfig] = Field(default={})
    deferred_threshold: int = Field(default=20, ge=0)
    tool_filter_groups: list[McpToolFilterGroup] = Field(default=[])
    search_limit: int = Field(default=5, ge=1, le=50)

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: object) -> object:
        if not isinstance(data, Mapping) or "servers" not in data:
            return data
        servers = renamed_tables(data["servers"], McpServerConfig, "mcp.servers")
        return {**data, "servers": servers}
