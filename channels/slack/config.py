"""``[channels.slack.<alias>]``: the Slack channel's keys (docs/channels/slack.md).

Loaded with the settings (:mod:`bot.channel_registry`), so it imports pydantic and ``bot``
only, never slack-bolt or slack-sdk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from bot.channel_config import ChannelCommon
from bot.config_model import ConfigModel, Reconnecting


class SuggestedPrompt(ConfigModel):
    """One prompt Slack offers under a new assistant thread: ``title`` is shown, ``message``
    is what the person sends when they pick it."""

    title: str = Field(min_length=1, max_length=100)
    message: str = Field(min_length=1, max_length=2000)


class SlackAssistantOptions(ConfigModel):
    """``[channels.slack.<alias>.assistant]``: Slack's assistant surface (docs/channels/slack.md,
    "Assistant threads"). Off by default; the app needs the AI-apps setting and
    ``assistant:write``.

    ``status`` is the status line shown while a turn works and no tool runs (a running tool
    shows "is running <tool>…"); ``prompts`` are the suggested prompts of a new thread by
    agent name (the channel's ``agent`` picks; at most four, Slack's limit), titled
    ``prompts_title``; the thread is titled with its first message, cut to ``title_chars``
    (0: never titled). ``stream``: where the agent's model streams, its answer is streamed
    into the thread (Slack's ``chat.startStream``) instead of the progress message's draft."""

    enabled: bool = False
    status: str = Field(default="is thinking…", min_length=1, max_length=100)
    prompts_title: str = Field(default="Try asking", max_length=100)
    prompts: dict[str, list[SuggestedPrompt]] = Field(default={})
    title_chars: int = Field(default=60, ge=0, le=255)
    stream: bool = True

    @model_validator(mode="after")
    def _four_prompts(self) -> SlackAssistantOptions:
        for agent, prompts in self.prompts.items():
            if len(prompts) > 4:
                given = len(prompts)
                raise ValueError(f"prompts.{agent}: Slack shows at most 4 prompts, {given} given")
        return self


class SlackChannelConfig(ChannelCommon, Reconnecting):
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
    # The slash command registered in the app's manifest; /help spells commands with it.
    slash_command: str = Field(default="/hatchway", pattern=r"^/[a-z0-9_\-]{1,31}$")
    # The largest attached file downloaded (Slack stores up to 1 GB); attachments.max_bytes
    # applies as well, and is usually the lower.
    download_max_bytes: int = Field(default=1_000_000_000, ge=1, le=1_000_000_000)
    # The largest file send_file posts (Slack takes up to 1 GB; an upload is held in memory).
    upload_max_bytes: int = Field(default=50 * 1024 * 1024, ge=1, le=1_000_000_000)
    # Slack's assistant surface: status line, suggested prompts, thread titles.
    assistant: SlackAssistantOptions = Field(default_factory=SlackAssistantOptions)

    # One spelling for the backoff keys of every channel and MCP server (until the next
    # release the old name still loads, with a warning).
    renamed_keys: ClassVar[Mapping[str, str]] = {"reconnect_base_s": "reconnect_initial_s"}

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


#: The model the registry validates ``[channels.slack.*]`` tables with.
CHANNEL_CONFIG = SlackChannelConfig
