"""``[tools]``: the tables of the built-in tools (workspace, files, shell, HTTP fetch,
web search, memory); see docs/tools.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bot.config_model import ConfigModel


class WorkspaceConfig(ConfigModel):
    """``[tools.workspace]``. ``scope`` picks which folder under ``path`` a turn's file tools
    and ``shell`` see: one per ``conversation`` (threads share their conversation's), one per
    ``agent``, or the whole folder (``shared``, the layout before scopes existed); see
    :mod:`bot.tools.builtin.scopes` and docs/tools.md."""

    path: str = "workspace"
    scope: Literal["conversation", "agent", "shared"] = "conversation"
    allow_sensitive_files: bool = False


class FileToolsConfig(ConfigModel):
    enabled: bool = True
    max_read_bytes: int = Field(default=256_000, ge=1000)
    max_write_bytes: int = Field(default=1_000_000, ge=1000)
    max_list_entries: int = Field(default=500, ge=1)
    max_search_results: int = Field(default=100, ge=1)
    max_output_chars: int = Field(default=20_000, ge=100)


ShellSandbox = Literal["auto", "bwrap", "none"]
ShellNetwork = Literal["none", "host"]


class ShellToolConfig(ConfigModel):
    """``[tools.shell]``. ``env_passthrough`` names the daemon's variables a command may see
    beyond the base set (exact names or ``*`` globs such as ``PIP_*``; see docs/tools.md).

    ``sandbox``: ``auto`` runs every command under bubblewrap when it works here and without
    it (with a start-up warning) when not; ``bwrap`` requires it (the daemon does not start
    without it); ``none`` never uses it. ``network`` is the default of every channel
    (``shell_network`` of a channel overrides it); it needs the sandbox to mean ``none``.
    ``hidden_paths`` are hidden from sandboxed commands besides the daemon's own files. The
    ``max_*`` limits apply to every call, sandboxed or not (``max_processes`` only in the
    sandbox), each process of it (0: no limit); see docs/tools.md.
    """

    enabled: bool = True
    timeout_s: float = Field(default=60.0, gt=0)
    max_output_chars: int = Field(default=20_000, ge=100)
    deny_patterns: list[str] = Field(default=[])
    env_passthrough: list[str] = Field(default=[])
    sandbox: ShellSandbox = "auto"
    network: ShellNetwork = "none"
    hidden_paths: list[str] = Field(default_factory=lambda: ["/etc/hatchway"])
    max_cpu_s: int = Field(default=60, ge=0)
    max_memory_mb: int = Field(default=4096, ge=0)
    max_open_files: int = Field(default=1024, ge=0)
    max_processes: int = Field(default=256, ge=0)
    max_file_mb: int = Field(default=1024, ge=0)

    @model_validator(mode="after")
    def _variable_names(self) -> ShellToolConfig:
        for index, entry in enumerate(self.env_passthrough):
            plain = entry.replace("*", "")
            if not (entry.replace("*", "_").isidentifier() and entry.isascii()) or not plain:
                raise ValueError(
                    f"env_passthrough[{index}] = {entry!r} is not a variable name (letters, "
                    "digits and _, with * as a glob; a lone * would pass the whole environment)"
                )
        for index, entry in enumerate(self.hidden_paths):
            if not entry.startswith("/") or entry.rstrip("/") == "":
                raise ValueError(
                    f"hidden_paths[{index}] = {entry!r} must be an absolute path other than /"
                )
        return self


class HttpFetchToolConfig(ConfigModel):
    enabled: bool = True
    timeout_s: float = Field(default=20.0, gt=0)
    max_bytes: int = Field(default=2_000_000, ge=1000)
    allow_hosts: list[str] = Field(default=[])
    max_output_chars: int = Field(default=20_000, ge=100)


SearchBackendName = Literal["none", "searxng", "brave"]

#: Where each hosted backend answers when ``tools.web_search.url`` is not set.
DEFAULT_SEARCH_URLS = {"brave": "https://api.search.brave.com"}


class WebSearchToolConfig(ConfigModel):
    """``[tools.web_search]``. ``backend`` ``none`` (the default) leaves the tool out;
    ``searxng`` needs ``url`` (the instance's base URL, its ``/search`` is asked for JSON);
    ``brave`` reads its key from the variable ``api_key_env`` names and ``url`` defaults to
    the Brave Search API. ``url`` is the one address the tool reaches: it is not vetted by
    the network guard (a self-hosted instance is often on loopback or the LAN), the result
    URLs are never fetched by this tool (``http_fetch`` vets them as any other URL)."""

    backend: SearchBackendName = "none"
    url: str | None = None
    api_key_env: str = "BRAVE_SEARCH_API_KEY"
    max_results: int = Field(default=5, ge=1, le=20)
    max_query_chars: int = Field(default=400, ge=10, le=2000)
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    max_bytes: int = Field(default=1_000_000, ge=10_000, le=50_000_000)
    max_output_chars: int = Field(default=8_000, ge=500)

    @model_validator(mode="after")
    def _backend_url(self) -> WebSearchToolConfig:
        if self.backend == "searxng" and not self.url:
            raise ValueError(
                'backend = "searxng" needs url, the instance\'s base URL '
                '(e.g. "http://127.0.0.1:8888")'
            )
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url = {self.url!r} must be an http:// or https:// URL")
        return self

    @property
    def base_url(self) -> str:
        """The backend's base URL, without a trailing slash (empty for ``none``)."""
        return (self.url or DEFAULT_SEARCH_URLS.get(self.backend, "")).rstrip("/")


class MemoryToolConfig(ConfigModel):
    """``[tools.memory]``. ``scope`` says which notes a call stores and recalls: its
    ``conversation``'s (threads included), its configured ``channel``'s, its ``agent``'s, or
    one set ``shared`` by everything (see :func:`bot.tools.builtin.memory.scope_key`)."""

    enabled: bool = True
    scope: Literal["conversation", "channel", "agent", "shared"] = "conversation"
    max_note_chars: int = Field(default=4000, ge=100)


class ToolsConfig(ConfigModel):
    workspace: WorkspaceConfig = Field(default_factory=WorkspaceConfig)
    files: FileToolsConfig = Field(default_factory=FileToolsConfig)
    shell: ShellToolConfig = Field(default_factory=ShellToolConfig)
    http_fetch: HttpFetchToolConfig = Field(default_factory=HttpFetchToolConfig)
    web_search: WebSearchToolConfig = Field(default_factory=WebSearchToolConfig)
    memory: MemoryToolConfig = Field(default_factory=MemoryToolConfig)
