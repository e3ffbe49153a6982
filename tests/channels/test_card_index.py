"""The card index every adapter shares, on a real SQLite file: entries survive a restart,
closing keeps the card known, rows written by earlier versions are read or ignored, and
the rows are the ``card:`` ones the daemon prunes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.store import Store
from channels.card_index import CardEntry, CardIndex

ALIAS = "slack.main"


async def test_entries_survive_a_restart_and_closing_keeps_the_card_known(
    tmp_path: Path,
) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, ALIAS)
        await index.remember("C1", "1.1", CardEntry(approval_id="a1", thread_id="0.5"))
        await index.remember(-100, 7, CardEntry(approval_id="a2"))
        await index.close(-100, 7, "a2")
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, ALIAS)  # a new process
        assert await index.find("C1", "1.1") == CardEntry(approval_id="a1", thread_id="0.5")
        assert await index.find("-100", "7") == CardEntry(approval_id="a2", open=False)
        assert await index.find("C1", "9.9") is None
        assert await CardIndex(store.channel_state, "slack.other").find("C1", "1.1") is None


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "card:-100:7",
            '{"approval_id": "a1", "open": false}',
            CardEntry(approval_id="a1", open=False),
        ),
        ("card:C1:1.1", '{"approval_id": "a1", "thread_ts": "0.5"}', CardEntry(approval_id="a1")),
        ("card:C1:1.1", "a1", None),  # a bare approval id
        ("card:C1:1.1", '{"open": true}', None),
        ("card:C1:1.1", "[1, 2]", None),
    ],
    ids=["closed telegram row", "slack row", "bare id", "no approval id", "not an object"],
)
async def test_rows_of_earlier_versions_are_read_or_ignored(
    tmp_path: Path, key: str, value: str, expected: CardEntry | None
) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        await store.channel_state.set(ALIAS, key, value)
        _, conversation, message = key.split(":")
        assert await CardIndex(store.channel_state, ALIAS).find(conversation, message) == expected


async def test_the_rows_are_the_card_rows_the_daemon_prunes(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, ALIAS)
        await index.remember("C1", "1.1", CardEntry(approval_id="a1"))
        assert await store.channel_state.prune("card:", older_than_s=-60) == 1
        assert await index.find("C1", "1.1") is None


async def test_without_a_store_nothing_is_remembered() -> None:
    index = CardIndex(None, ALIAS)
    await index.remember("C1", "1.1", CardEntry(approval_id="a1"))
    assert await index.find("C1", "1.1") is None
