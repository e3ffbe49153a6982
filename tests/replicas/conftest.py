"""Fixtures of the replica tests: the Telegram fake, and a link to the real PostgreSQL server
(:class:`~tests.fakes.db_link.DatabaseLink`) the test can cut or freeze."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from tests.fakes.db_link import DatabaseLink
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_setup import TOKEN


@pytest.fixture
async def tg(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeTelegram]:
    monkeypatch.setenv("HATCHWAY_TELEGRAM_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with FakeTelegram(TOKEN) as fake:
        yield fake


@pytest.fixture
async def link(pg_url: str) -> AsyncIterator[DatabaseLink]:
    parts = urlsplit(pg_url)
    assert parts.hostname is not None and parts.port is not None
    async with DatabaseLink(parts.hostname, parts.port) as opened:
        yield opened


@pytest.fixture
async def second_link(pg_url: str) -> AsyncIterator[DatabaseLink]:
    """A link of its own for a second replica."""
    parts = urlsplit(pg_url)
    assert parts.hostname is not None and parts.port is not None
    async with DatabaseLink(parts.hostname, parts.port) as opened:
        yield opened
