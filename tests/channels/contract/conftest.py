"""The card contract suite's fixture: one :class:`~tests.channels.contract.driver.CardDriver`
per platform, so every case runs on Telegram, Slack and Discord under the same test id
(``test_…[telegram]``, ``[slack]``, ``[discord]``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.store import Store
from tests.channels.contract.discord import discord_cards
from tests.channels.contract.driver import CardDriver
from tests.channels.contract.slack import slack_cards
from tests.channels.contract.telegram import telegram_cards

PLATFORMS = ("telegram", "slack", "discord")


@pytest.fixture(params=PLATFORMS)
async def cards(request: pytest.FixtureRequest, store: Store) -> AsyncIterator[CardDriver]:
    if request.param == "discord":
        request.getfixturevalue("discord_env")
    running = {"telegram": telegram_cards, "slack": slack_cards, "discord": discord_cards}
    async with running[request.param](store) as driver:
        yield driver
