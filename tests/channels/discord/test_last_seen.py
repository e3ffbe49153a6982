"""The last-seen record a catch-up starts from, on a real SQLite store: what is stored is
always safe to start from (never past a message still being handed over or a conversation
still being caught up), rows are written at most every few seconds, and forgotten
conversations lose their row."""

from __future__ import annotations

import pytest

from bot.store import Store
from channels.discord.last_seen import PREFIX, LastSeen

CHANNEL = "discord.main"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def stored(store: Store) -> dict[str, int]:
    rows = await store.channel_state.items(CHANNEL, PREFIX)
    return {key.removeprefix(PREFIX): int(value) for key, value in rows}


async def test_the_highest_id_seen_is_stored_and_read_back(store: Store) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 105)
    seen.seen("10", 101)  # an older one later changes nothing
    seen.seen("20", 7)
    await seen.write()
    assert await stored(store) == {"10": 105, "20": 7}
    again = LastSeen(store.channel_state, CHANNEL)
    await again.load()
    assert again.conversations() == {"10": 105, "20": 7}


async def test_a_message_being_handed_over_holds_the_row_below_it(store: Store) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 100)
    with seen.delivering("10", 110):
        seen.seen("10", 120)  # the bot's own reply, seen while 110 is still on its way
        await seen.write()
        assert await stored(store) == {"10": 109}
    await seen.write()
    assert await stored(store) == {"10": 120}


async def test_a_failed_hand_over_is_not_seen(store: Store) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 100)
    with pytest.raises(RuntimeError), seen.delivering("10", 110):
        raise RuntimeError("the host could not take it")
    await seen.write()
    assert await stored(store) == {"10": 100}


async def test_a_hold_keeps_the_row_until_released_and_it_never_goes_back(store: Store) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 100)
    await seen.write()
    hold = seen.hold("10", 100)  # a catch-up starting from 100
    seen.seen("10", 150)  # a live message meanwhile
    await seen.write()
    assert await stored(store) == {"10": 100}
    hold.floor = 130  # the catch-up got through 130
    await seen.write()
    assert await stored(store) == {"10": 130}
    lower = seen.hold("10", 90)
    await seen.write()
    assert await stored(store) == {"10": 130}  # never back
    seen.release(lower)
    seen.release(hold)
    await seen.write()
    assert await stored(store) == {"10": 150}


async def test_rows_are_written_at_most_every_few_seconds(store: Store) -> None:
    clock = Clock()
    seen = LastSeen(store.channel_state, CHANNEL, write_every_s=5, clock=clock)
    seen.seen("10", 100)
    await seen.write_if_due()
    assert await stored(store) == {}
    clock.now += 5
    await seen.write_if_due()
    assert await stored(store) == {"10": 100}
    seen.seen("10", 200)
    clock.now += 1
    await seen.write_if_due()
    assert await stored(store) == {"10": 100}


async def test_a_forgotten_conversation_loses_its_row(store: Store) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 100)
    seen.seen("20", 200)
    await seen.write()
    seen.forget("10")
    await seen.write()
    assert await stored(store) == {"20": 200}
    assert seen.conversations() == {"20": 200}


async def test_a_conversation_first_seen_during_an_open_gap_is_stored_no_higher_than_its_start(
    store: Store,
) -> None:
    seen = LastSeen(store.channel_state, CHANNEL)
    seen.seen("10", 100)
    seen.open_gap(150)  # a new session: nothing after 150 known to be seen
    seen.seen("20", 300)  # a live message (or the bot's answer) in a channel without a row
    seen.seen("10", 310)  # a watched one is held by its catch-up, not by the gap
    await seen.write()
    assert await stored(store) == {"10": 310, "20": 150}
    assert seen.watched_before_gap() == {"10"}  # the catch-up fetches "20" from 150
    seen.close_gap()
    await seen.write()
    assert await stored(store) == {"10": 310, "20": 300}
