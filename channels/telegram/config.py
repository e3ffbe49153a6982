"""``[channels.telegram.<alias>]``: the Telegram channel's keys (docs/channels/telegram.md).

Loaded with the settings (:mod:`bot.channel_registry`), so it imports pydantic and ``bot``
only, never python-telegram-bot.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.channel_config import ChannelCommon
from bot.config_model import Reconnecting

MB = 1024 * 1024


class TelegramChannelConfig(ChannelCommon, Reconnecting):
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
    retry_after_max_s: float = Field(default=60.0, ge=0)
    send_attempts: int = Field(default=3, ge=1, le=10)
    #: How long a check of a send cut off by a crash waits for newer message ids before it
    #: gives up (the reply is then sent again, marked; :mod:`channels.telegram.delivery_check`).
    delivery_check_wait_s: float = Field(default=60.0, ge=0)
    #: A message this process sends bounds that check only when claimed this long after the
    #: cut-off one (whose request may still be on its way; the clocks of several hosts).
    delivery_check_margin_s: float = Field(default=5.0, ge=0)
    #: The pause between two edits of one check (Telegram's limit is about 30 calls a second).
    delivery_check_interval_s: float = Field(default=0.05, ge=0)
    #: The Bot API lets bots download files up to 20 MB and upload up to 50 MB; a local
    #: Bot API server allows more (raise these to match it).
    download_max_bytes: int = Field(default=20 * MB, ge=1)
    upload_max_bytes: int = Field(default=50 * MB, ge=1)


#: The model the registry validates ``[channels.telegram.*]`` tables with.
CHANNEL_CONFIG = TelegramChannelConfig
