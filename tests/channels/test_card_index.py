"""The card index every adapter shares, on a real SQLite file: entries survive a restart,
closing keeps the card known (and what it showed), rows written by earlier versions are read
or ignored, full views are listed per approval, and the rows are the ``card:`` ones the
daemon prunes."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.store import Store
from channels.common.card_index import CardEntry, CardIndex, ViewMessage

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


async def test_what_a_message_showed_survives_closing(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, "telegram.main")
        await index.remember(-100, 7, CardEntry(approval_id="a1", thread_id="5", cut=True))
        await index.close(-100, 7, "a1")
        assert await index.find(-100, 7) == CardEntry(
            approval_id="a1", open=False, thread_id="5", cut=True
        )
        await index.remember(-100, 8, CardEntry(approval_id="a1"))
        await index.close(-100, 8, "a2")  # another approval's outcome: nothing of a1 kept
        assert await index.find(-100, 8) == CardEntry(approval_id="a2", open=False)


async def test_full_views_are_listed_per_approval_and_taken_once(tmp_path: Path) -> None:
    pages = [
        ViewMessage(conversation="-100", message="9", buttons=False),
        ViewMessage(conversation="-100", message="10", buttons=True),
    ]
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, "telegram.main")
        await index.add_views("a1", pages[:1])
        await index.add_views("a1", pages[1:])
        await index.add_views("a2", [ViewMessage(conversation="5", message="1", buttons=True)])
    async with await Store.open(tmp_path / "h.db") as store:
        index = CardIndex(store.channel_state, "telegram.main")  # a new process
        assert await index.find("-100", "10") == CardEntry(approval_id="a1", full_view=True)
        assert await index.take_views("a1") == tuple(pages)
        assert await index.take_views("a1") == ()
        assert len(await index.take_views("a2")) == 1
        assert await store.channel_state.prune("card:", older_than_s=-60) == 3  # views pruned
