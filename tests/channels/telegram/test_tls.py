"""The Telegram channel's TLS set-up: one CA bundle load for every channel's HTTP clients."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from bot.channel_registry import ChannelContext
from bot.envelope import ChannelRef
from bot.store import Store
from channels.telegram.adapter import TelegramChannel, tls_context
from channels.telegram.config import TelegramChannelConfig
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import REF, TOKEN

OTHER = ChannelRef(kind="telegram", alias="other")


async def test_every_http_client_of_every_channel_shares_one_tls_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[ssl.SSLContext] = []
    make = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(make(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    tls_context.cache_clear()  # as in a new process
    async with FakeTelegram(TOKEN) as tg, await Store.open(tmp_path / "state.db") as store:
        config = TelegramChannelConfig.model_validate(
            {"api_base_url": tg.base_url, "file_base_url": tg.file_base_url}
        )
        channel = TelegramChannel(REF, config, ChannelContext(store=store), token=TOKEN)
        other = TelegramChannel(OTHER, config, ChannelContext(store=store), token=TOKEN)
        assert len(built) == 1
        assert channel.downloads._tls is other.downloads._tls is built[0]
        assert built[0].verify_mode is ssl.CERT_REQUIRED and built[0].check_hostname
        # Both clients still work: getMe (API client) and getUpdates (polling client).
        bot = channel._app.bot
        await bot.initialize()
        try:
            assert bot.username
            assert await bot.get_updates(timeout=0) == ()
        finally:
            await bot.shutdown()
