"""``[agents.<name>]``: agent profiles, and ``[[agents.<name>.routes]]``: where each answers.

One bot serves rooms with different jobs: a careful agent with the shell in ``#ops``, a
chatty one with no tools in ``#general``. Each profile is a set of overrides on ``[agent]``
(the profile named ``default``): a key a profile leaves unset is ``[agent]``'s. Which agent
answers a conversation is decided by :mod:`bot.routing` from the routes declared here and each
channel's ``agent`` key (:class:`~bot.channel_config.ChannelCommon`).

A system prompt comes inline (``system_prompt``) or from a file (``system_prompt_file``,
relative to the config file's directory, or to the state directory when there is no file),
read when the configuration loads, so a SIGHUP reload reads it again
(:func:`read_prompt_file`). Process-wide keys of ``[agent]`` (``max_concurrent_turns``,
``on_interrupted``, receipts) have no per-agent override.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from bot.channel_config import (
    ApprovalLevel,
    GrantChoice,
    QuorumConfig,
    ReminderOverride,
    ToolApproval,
    check_grant_choices,
)
from bot.channel_registry import known_kinds
from bot.config_model import ConfigModel
from bot.errors import ConfigError

#: The agent ``[agent]`` describes, and the one a channel answers with unless told otherwise.
DEFAULT_AGENT = "default"
#: What an agent may be called: its name goes into session keys, logs and metric labels.
AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
#: A tool list entry naming every tool of one MCP server.
MCP_PREFIX = "mcp:"


# The limits of the ``[agent]`` keys a profile may override, written once: ``AgentConfig``
# and ``AgentProfile`` type their fields with these.
Temperature = Annotated[float, Field(ge=0, le=2)]
MaxTokens = Annotated[int, Field(ge=1)]
ToolIterations = Annotated[int, Field(ge=1, le=200)]
ToolResultChars = Annotated[int, Field(ge=200)]
HistoryTokens = Annotated[int, Field(ge=500)]
Seconds = Annotated[float, Field(gt=0)]
#: A voice note's language hint: an ISO 639-1 (or 639-2) code, as the endpoints take it.
Language = Annotated[str, Field(pattern=r"^[a-z]{2,3}$")]


def check_agent_name(name: str) -> str:
    if not AGENT_NAME.fullmatch(name):
        raise ValueError(
            f"agent name {name!r}: use letters, digits, '-' and '_' (at most 40, starting "
            "with a letter or digit)"
        )
    return name


def exclusive_prompt(data: object) -> object:
    """Refuse a table that sets both ``system_prompt`` and ``system_prompt_file`` (checked
    on the file's own keys, before validation: once loaded, a file's text is held in
    ``system_prompt``)."""
    if isinstance(data, Mapping) and "system_prompt" in data and "system_prompt_file" in data:
        raise ValueError("set system_prompt or system_prompt_file, not both")
    return data


class AgentApproval(ReminderOverride):
    """An agent's overrides of the approval policy; unset keys keep what ``[approval]`` and
    the channel's ``approval`` table say (docs/approvals.md). ``tools``: per tool (name or
    pattern), the agent's own reminder schedule for it."""

    level: ApprovalLevel | None = None
    auto_approve: list[str] | None = None
    always_ask: list[str] | None = None
    deny: list[str] | None = None
    tools: dict[str, ToolApproval] = Field(default={})
    grant_choices: list[GrantChoice] | None = None

    _grant_choices = field_validator("grant_choices")(check_grant_choices)
    #: Replaces ``[approval.quorum]`` (or the channel's) whole for this agent.
    quorum: QuorumConfig | None = None


class RouteConfig(ConfigModel):
    """One ``[[agents.<name>.routes]]`` entry: the conversations it sends to its agent.

    Every key set must match; the route that sets the most keys wins, and between routes
    setting as many, the one declared first (agents in file order, then routes in order).
    ``channel`` is ``kind.alias`` or a whole kind; ``conversation`` is the platform's id of
    the conversation (Telegram chat, Slack channel, Discord channel; a Slack event carries
    the channel's id, never its name); ``thread`` a Telegram topic, Discord thread or Slack
    thread; ``dm`` true for direct messages only, false for groups only; ``guild`` a Discord
    server.
    """

    channel: str | None = None
    conversation: str | None = None
    thread: str | None = None
    dm: bool | None = None
    guild: str | None = None

    @field_validator("channel")
    @classmethod
    def _known_kind(cls, value: str | None) -> str | None:
        if value is None:
            return None
        kind, _, alias = value.partition(".")
        if kind not in known_kinds():
            raise ValueError(
                f"channel {value!r}: write kind.alias (or a kind alone), the kind one of "
                f"{known_kinds()}"
            )
        if "." in value and not alias:
            raise ValueError(f"channel {value!r}: the alias after the dot is missing")
        return value

    @model_validator(mode="after")
    def _matches_something(self) -> RouteConfig:
        if not self.model_fields_set:
            raise ValueError(
                "a route with no key matches everything: name a channel, conversation, "
                "thread, dm or guild (a channel's own agent key sets its default)"
            )
        if self.guild is not None and self.kind not in (None, "discord"):
            raise ValueError("guild only applies to discord channels")
        return self

    @property
    def kind(self) -> str | None:
        return None if self.channel is None else self.channel.partition(".")[0]

    @property
    def specificity(self) -> int:
        """How many keys the route sets: the more, the earlier it is tried."""
        return len(self.model_fields_set)

    def describe(self) -> str:
        """The route's keys as written (``channel=slack.work dm=true``)."""
        parts = []
        for key in type(self).model_fields:
            value = getattr(self, key)
            if value is not None:
                shown = str(value).lower() if isinstance(value, bool) else value
                parts.append(f"{key}={shown}")
        return " ".join(parts)


class AgentProfile(ConfigModel):
    """One ``[agents.<name>]`` table: overrides of ``[agent]`` (unset keys inherit), the
    agent's approval overrides and its routes."""

    system_prompt: str | None = None
    system_prompt_file: str | None = None
    provider: str | None = None
    fallback: list[str] | None = None
    temperature: Temperature | None = None
    max_tokens: MaxTokens | None = None
    allowed_tools: list[str] | None = None
    excluded_tools: list[str] | None = None
    hide_unapprovable_tools: bool | None = None
    max_tool_iterations: ToolIterations | None = None
    parallel_tools: bool | None = None
    max_tool_result_chars: ToolResultChars | None = None
    turn_timeout_s: Seconds | None = None
    tool_timeout_s: Seconds | None = None
    history_max_tokens: HistoryTokens | None = None
    transcription_language: Language | None = None
    approval: AgentApproval = Field(default_factory=AgentApproval)
    routes: list[RouteConfig] = Field(default=[])

    @model_validator(mode="before")
    @classmethod
    def _one_prompt(cls, data: object) -> object:
        return exclusive_prompt(data)

    def overrides(self) -> dict[str, object]:
        """The ``[agent]`` keys this profile sets, with their values."""
        skip = {"approval", "routes"}
        return {key: getattr(self, key) for key in self.model_fields_set if key not in skip}


def read_prompt_file(where: str, file: str, base_dir: Path) -> str:
    """The text of a ``system_prompt_file`` (``where`` is its dotted key), relative to
    ``base_dir``; :class:`ConfigError` naming the key when it cannot be read or is empty."""
    path = Path(file).expanduser()
    if not path.is_absolute():
        path = base_dir / path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise ConfigError(f"{where}: {path} cannot be read: {why}") from None
    if not text.strip():
        raise ConfigError(f"{where}: {path} is empty")
    return text.strip()
