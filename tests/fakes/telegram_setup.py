"""The Telegram side of a test: the bot's token, the people in its chats, and the channel or
daemon settings wired to a :class:`~tests.fakes.telegram_server.FakeTelegram`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.app import App
from bot.channel import HealthState
from bot.channel_registry import ChannelContext
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from channels.telegram.config import TelegramChannelConfig
from tests.fakes.channel_health import wait_for_health
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "424242:AAtest-token-for-the-fake-api-0123456789"
REF = ChannelRef(kind="telegram", alias="main")
REQUESTER = 1001
APPROVER = 2002
STRANGER = 3003

_QUICK_RECONNECTS: dict[str, Any] = {
    "poll_timeout_s": 1,
    "reconnect_initial_s": 0.01,
    "reconnect_max_s": 0.05,
}


def config_for(tg: FakeTelegram, **overrides: Any) -> TelegramChannelConfig:
    """Adapter config against ``tg``: anyone may talk, :data:`APPROVER` approves."""
    values: dict[str, Any] = {
        "api_base_url": tg.base_url,
        "file_base_url": tg.file_base_url,
        **_QUICK_RECONNECTS,
        "allowed_users": ["*"],
        "approvers": [str(APPROVER)],
        **overrides,
    }
    return TelegramChannelConfig.model_validate(values)


def channel_for(
    tg: FakeTelegram,
    store: Store,
    *,
    token: str = TOKEN,
    secret: str | None = None,
    **overrides: Any,
) -> TelegramChannel:
    """The adapter alone, on ``store``, with :func:`config_for` plus ``overrides``."""
    return TelegramChannel(
        REF,
        config_for(tg, **overrides),
        ChannelContext(store=store),
        token=token,
        webhook_secret=secret,
    )


def settings_for(
    tg: FakeTelegram, tmp_path: Path, *, dm_approvers: bool = True, **channel_keys: Any
) -> Settings:
    """Daemon settings with one Telegram channel: only :data:`REQUESTER` may talk,
    :data:`APPROVER` approves (also by DM, unless ``dm_approvers`` is off), with
    ``channel_keys`` added to its table. The token comes from HATCHWAY_TELEGRAM_TOKEN."""
    telegram_main: dict[str, Any] = {
        "api_base_url": tg.base_url,
        "file_base_url": tg.file_base_url,
        **_QUICK_RECONNECTS,
        "allowed_users": [str(REQUESTER)],
        "approvers": [str(APPROVER)],
        **channel_keys,
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "approval": {"timeout_s": 30, "dm_approvers": dm_approvers},
            "channels": {"telegram": {"main": telegram_main}},
        },
        environ={},
        require_provider=False,
    )


async def started(app: App) -> TelegramChannel:
    """The daemon's Telegram channel, once it is CONNECTED."""
    channel = app.channels["telegram.main"]
    assert isinstance(channel, TelegramChannel)
    await wait_for_health(channel, HealthState.CONNECTED)
    return channel
