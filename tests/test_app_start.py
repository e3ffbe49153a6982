"""What ``App.start`` tidies before it serves: the index of old approval cards."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.app import CARD_INDEX_KEEP_S, App
from bot.errors import ConfigError
from bot.store import Store
from tests.fakes.openai_server import OpenAIFake
from tests.test_console import Terminal, settings_for


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    made = Terminal()
    yield made
    made.close()
    made.channel_input.close()


@pytest.fixture
async def fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


async def test_start_prunes_card_index_rows_older_than_a_week(
    fake: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: Terminal
) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-000")
    settings = settings_for(fake, tmp_path)
    path = settings.database_path()
    async with await Store.open(path) as store:
        for key in ("card:old", "card:recent", "offset"):
            await store.channel_state.set("telegram.main", key, "x")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE channel_state SET updated_at = updated_at - ? WHERE key != 'card:recent'",
            (CARD_INDEX_KEEP_S + 60,),
        )
    async with App(settings, channels={"console.main": terminal.channel}):
        pass
    with sqlite3.connect(path) as conn:
        keys = sorted(k for (k,) in conn.execute("SELECT key FROM channel_state"))
    assert keys == ["card:recent", "offset"]


async def test_receipts_without_a_key_fail_at_start_not_mid_turn(
    fake: OpenAIFake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: Terminal
) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.delenv("HATCHWAY_RECEIPT_KEY", raising=False)
    settings = settings_for(fake, tmp_path, receipts=True, receipt_key_env="HATCHWAY_RECEIPT_KEY")
    with pytest.raises(ConfigError, match="HATCHWAY_RECEIPT_KEY"):
        async with App(settings, channels={"console.main": terminal.channel}):
            pass
