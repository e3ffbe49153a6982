"""The admission step that keeps senders' display names and conversations' titles
(:class:`bot.gateway.names.DisplayNameBook`), on a real SQLite store: a write the first
time, when changed, and a day after the last; none otherwise, and every message passed on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.gateway.admission import Arrival
from bot.gateway.names import REWRITE_AFTER_S, DisplayNameBook
from bot.store import Store
from tests.sqlite_template import copy_migrated

SLACK = ChannelRef(kind="slack", alias="work")


@pytest.fixture
async def store(tmp_path: Path, migrated_sqlite: Path) -> AsyncIterator[Store]:
    async with await Store.open(copy_migrated(migrated_sqlite, tmp_path / "hatchway.db")) as opened:
        yield opened


def message(
    name: str = "", *, title: str = "", thread: str | None = None, thread_title: str = ""
) -> Arrival:
    envelope = IngressEnvelope(
        channel=SLACK,
        message_id="m1",
        conversation_id="C1",
        sender=Sender(id="U1", display_name=name),
        text="hello",
        reply_target=DeliveryTarget(channel=SLACK, conversation_id="C1"),
        thread_id=thread,
        conversation_title=title,
        thread_title=thread_title,
    )
    return Arrival(envelope=envelope, session_key="slack.work:C1")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_names_and_titles_are_written_when_new_changed_or_a_day_old(store: Store) -> None:
    clock = Clock()
    book = DisplayNameBook(store, clock=clock)
    passed: list[Arrival] = []

    async def call_next(arrival: Arrival) -> None:
        passed.append(arrival)

    async def seen_at(table: str) -> list[tuple[str, float]]:
        rows = await store.db.fetchall(f"SELECT * FROM {table}")
        return sorted((str(r[1]), float(r[2])) for r in rows)

    first = message("Ann", title="general", thread="T1", thread_title="plans")
    await book(first, call_next)
    assert await store.display_names.of(["slack:U1"]) == {"slack:U1": "Ann"}
    titles = await store.conversation_titles.of(["slack.work:C1", "slack.work:C1:T1"])
    assert titles == {"slack.work:C1": "general", "slack.work:C1:T1": "plans"}

    clock.now += 60
    before = (await seen_at("display_names"), await seen_at("conversation_titles"))
    await book(message("Ann", title="general", thread="T1", thread_title="plans"), call_next)
    await book(message(), call_next)  # no name, no title: nothing to keep
    assert (await seen_at("display_names"), await seen_at("conversation_titles")) == before

    await book(message("Ann B.", title="general"), call_next)
    assert await store.display_names.of(["slack:U1"]) == {"slack:U1": "Ann B."}
    assert await seen_at("conversation_titles") == before[1]

    clock.now += REWRITE_AFTER_S
    await book(message("Ann B.", title="general"), call_next)
    assert await seen_at("display_names") == [("Ann B.", clock.now)]
    assert ("general", clock.now) in await seen_at("conversation_titles")
    assert len(passed) == 5 and passed[0] is first
