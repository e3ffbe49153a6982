"""Shared fixtures of the reliability suite: loopback platform fakes and their tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import BOT_ID, GENERAL
from tests.fakes.slack_server import FakeSlack, person
from tests.fakes.slack_setup import APP_TOKEN, BOT_TOKEN, REQUESTER
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import TOKEN as TELEGRAM_TOKEN


@pytest.fixture(autouse=True)
def _platform_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TELEGRAM_TOKEN)
    monkeypatch.setenv("HATCHWAY_DISCORD_TOKEN", DISCORD_TOKEN)
    monkeypatch.setenv("HATCHWAY_SLACK_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.setenv("HATCHWAY_SLACK_APP_TOKEN", APP_TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(TELEGRAM_TOKEN) as fake:
        yield fake


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(BOT_TOKEN, APP_TOKEN) as fake:
        fake.users[REQUESTER] = person(REQUESTER, "Ann")
        yield fake


@pytest.fixture
async def discord_fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(bot_id=BOT_ID) as server:
        server.add_guild(channels={GENERAL: "general"})
        yield server
