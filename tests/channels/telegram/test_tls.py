"""The Telegram channel's TLS set-up: one CA bundle load for PTB's two HTTP clients."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from bot.channel_registry import ChannelContext
from bot.store import Store
from channels.telegram.adapter import TelegramChannel
from channels.telegram.config import TelegramChannelConfig
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import REF, TOKEN


async def test_both_http_clients_share_one_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[ssl.SSLContext] = []
    make = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(make(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    async with FakeTelegram(TOKEN) as tg, await Store.open(tmp_path / "state.db") as store:
        config = TelegramChannelConfig.model_validate(
            {"api_base_url": tg.base_url, "file_base_url": tg.file_base_url}
        )
        channel = TelegramChannel(REF, config, ChannelContext(store=store), token=TOKEN)
        assert len(built) == 1
        assert built[0].verify_mode is ssl.CERT_REQUIRED and built[0].check_hostname
        # Both clients still work: getMe (API client) and getUpdates (polling client).
        bot = channel._app.bot
        await bot.initialize()
        try:
            assert bot.username
            assert await bot.get_updates(timeout=0) == ()
        finally:
            await bot.shutdown()
