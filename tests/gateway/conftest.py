"""What the gateway tests over the Telegram loopback fake share: the fake (``tg``, the token
in the environment the configuration reads) and a model that echoes the last message."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.providers.base import CompletionRequest, ProviderReply
from tests.fakes.scripted_provider import reply
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import TOKEN


@pytest.fixture
async def tg(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeTelegram]:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with FakeTelegram(TOKEN) as fake:
        yield fake


def echo(request: CompletionRequest) -> ProviderReply:
    """The scripted model's answer: ``echo:`` and the last message."""
    return reply(f"echo: {request.messages[-1].content}")
