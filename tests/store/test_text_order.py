"""What the store returns in an order that involves text (keys, ids, names) is in code point
order on every engine and under every collation (``text_store``: also PostgreSQL databases
of ICU's ``en-US`` and glibc's ``en_US.UTF-8``, which put ``_`` and ``-`` before letters and
weigh case last): sorted by the store, not by the database's ``ORDER BY``."""

from __future__ import annotations

import pytest

from bot.store import Store
from bot.store.channel_state import ChannelState
from bot.store.replicas import ReplicaRecord
from bot.store.schedules import ScheduleRow

#: Texts whose order differs between code points and a language's collation.
TEXTS = ("b", "B", "_a", "-c", "a", "a-b", "ab", "A:z", "a;z")


@pytest.fixture
def store(text_store: Store) -> Store:
    return text_store


async def test_keys_written_at_the_same_moment_come_in_code_point_order(store: Store) -> None:
    state = ChannelState(store.db, clock=lambda: 1000.0)
    for text in TEXTS:
        await state.set("slack.team", f"card:{text}", text)
    assert [value for _, value in await state.items("slack.team", "card:")] == sorted(TEXTS)


async def test_jobs_and_replicas_of_the_same_moment_come_in_code_point_order(
    store: Store,
) -> None:
    for text in TEXTS:
        await store.schedules.add(
            ScheduleRow(
                id=f"job{text}",
                spec="{}",
                next_run_at=50.0,
                last_run_at=None,
                enabled=True,
                created_at=1.0,
            )
        )
        await store.replicas.register(
            ReplicaRecord(id=f"host{text}", host="h", pid=1, started_at=1.0, heartbeat_at=9.0)
        )
    expected = sorted(TEXTS)
    assert [job.id.removeprefix("job") for job in await store.schedules.list()] == expected
    assert [job.id.removeprefix("job") for job in await store.schedules.due(60.0)] == expected
    assert [r.id.removeprefix("host") for r in await store.replicas.all()] == expected
    assert [r.id.removeprefix("host") for r in await store.replicas.live(since=5.0)] == expected
