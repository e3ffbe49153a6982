"""Prefix matches in the store mean the same on both engines: exact characters, case
included (SQLite's ``LIKE`` ignores ASCII case, PostgreSQL's does not), and ``%``, ``_`` and
``\\`` in a key or an id are themselves, never wildcards; and the same under every collation
(``text_store``: also PostgreSQL databases of ICU's ``en-US`` and glibc's ``en_US.UTF-8``)."""

from __future__ import annotations

import pytest

from bot.store import InboxKey, Store
from tests.store.records import TELEGRAM, envelope, session_of, turn

CHANNEL = "slack.team"


@pytest.fixture
def store(text_store: Store) -> Store:
    return text_store


async def test_channel_state_items_and_prune_match_a_prefix_exactly(store: Store) -> None:
    keys = ["card:1", "CARD:2", "Card:3", "card_x", "cardyx", "card%z", "card\\w", "cardw"]
    for key in keys:
        await store.channel_state.set(CHANNEL, key, f"v-{key}")
    assert await store.channel_state.items(CHANNEL, "card:") == [("card:1", "v-card:1")]
    assert await store.channel_state.items(CHANNEL, "CARD:") == [("CARD:2", "v-CARD:2")]
    assert [k for k, _ in await store.channel_state.items(CHANNEL, "card_")] == ["card_x"]
    assert [k for k, _ in await store.channel_state.items(CHANNEL, "card%")] == ["card%z"]
    assert [k for k, _ in await store.channel_state.items(CHANNEL, "card\\")] == ["card\\w"]
    # a prune by prefix deletes the rows of that prefix and no other
    assert await store.channel_state.prune("card:", older_than_s=-60) == 1
    assert await store.channel_state.prune("card_", older_than_s=-60) == 1
    left = sorted(k for k, _ in await store.channel_state.items(CHANNEL, ""))
    assert left == sorted(set(keys) - {"card:1", "card_x"})


async def test_forgetting_a_conversation_leaves_those_whose_id_differs_in_case_or_wildcards(
    store: Store,
) -> None:
    forgotten = envelope("1001", "G_1", "1", thread="t1")
    kept = [
        envelope("1001", "g_1", "2", thread="t1"),  # differs in case only
        envelope("1001", "GX1", "3", thread="t1"),  # what "_" would match as a wildcard
        envelope("1001", "G%1", "4", thread="t1"),
    ]
    for env in (forgotten, *kept):
        await turn(store, env)
    report = await store.forget.conversation(str(TELEGRAM), "G_1")
    assert report.removed["inbox"] == 1
    assert await store.history.load(session_of(forgotten)) == []
    for env in kept:
        assert await store.history.load(session_of(env)) != [], env.conversation_id
        key = InboxKey(channel=str(TELEGRAM), message_id=env.message_id)
        assert await store.inbox.get(key) is not None


async def test_notes_outside_a_scope_prefix_are_counted_whatever_their_case(store: Store) -> None:
    inside = f"conversation:{TELEGRAM}:G_1"
    await store.memory.add(scope_key=inside, content="in")
    await store.memory.add(scope_key=f"{inside}:t1", content="in a thread")
    for outside in (f"conversation:{TELEGRAM}:g_1", f"conversation:{TELEGRAM}:GX1", "Conv"):
        await store.memory.add(scope_key=outside, content="out")
    assert await store.memory.count_outside(inside) == 3
    assert await store.memory.count_outside("conversation:") == 1


async def test_forgetting_a_person_on_a_channel_keeps_notes_of_a_channel_differing_in_case(
    store: Store,
) -> None:
    mine = f"conversation:{TELEGRAM}:G1"
    other = f"conversation:{str(TELEGRAM).upper()}:G1"
    for scope in (mine, other, f"Conversation:{TELEGRAM}:G1", "user:1001"):
        await store.memory.add(scope_key=scope, content="a note", created_by="1001")
    report = await store.forget.user("1001", channel=str(TELEGRAM))
    # their note in this channel's conversation, and those of no conversation or channel
    # scope ("Conversation:" is not "conversation:")
    assert report.removed["memory"] == 3
    assert await store.memory.count_outside(other) == 0
