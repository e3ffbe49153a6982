"""Fixtures of the channel tests: a SQLite store under ``tmp_path`` and the loopback
platform fakes, each started and stopped inside the test's event loop. A test fails when its
fake refused a call for breaking the platform's rules (``rule_refusals``), even if the adapter
coped with the refusal: no channel test expects hatchway to send what a platform refuses.

Modules that run the daemon (or build channels from settings) take the token from the
environment: they use the ``discord_env`` / ``telegram_env`` fixture through ``pytestmark``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store import Store
from tests.fakes import discord_setup, slack_setup, telegram_setup
from tests.fakes.discord_server import BOT_TOKEN as DISCORD_TOKEN
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_server import FakeSlack, person
from tests.fakes.telegram_server import FakeTelegram
from tests.sqlite_template import copy_migrated

LOOPBACK = "127.0.0.1,localhost"


@pytest.fixture
async def store(tmp_path: Path, migrated_sqlite: Path) -> AsyncIterator[Store]:
    async with await Store.open(copy_migrated(migrated_sqlite, tmp_path / "state.db")) as opened:
        yield opened


@pytest.fixture
async def tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(telegram_setup.TOKEN) as fake:
        yield fake
    assert fake.rule_refusals == [], "the adapter sent what Telegram refuses"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(slack_setup.BOT_TOKEN, slack_setup.APP_TOKEN) as fake:
        fake.users[slack_setup.REQUESTER] = person(slack_setup.REQUESTER, "Ann")
        yield fake
    assert fake.rule_refusals == [], "the adapter sent what Slack refuses"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """Discord with one guild: #general and an approvers role."""
    async with FakeDiscord(bot_id=discord_setup.BOT_ID) as server:
        server.add_guild(
            channels={discord_setup.GENERAL: "general"},
            roles={discord_setup.APPROVER_ROLE: "approvers"},
        )
        yield server
    assert server.rule_refusals == [], "the adapter sent what Discord refuses"


@pytest.fixture
def discord_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_DISCORD_TOKEN", DISCORD_TOKEN)
    monkeypatch.setenv("NO_PROXY", LOOPBACK)


@pytest.fixture
def telegram_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", telegram_setup.TOKEN)
    monkeypatch.setenv("NO_PROXY", LOOPBACK)
