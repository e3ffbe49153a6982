"""``[tools]``: the tables of the built-in tools (workspace, files, shell, HTTP fetch,
memory); see docs/tools.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bot.config_model import ConfigModel


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
