"""The audit log's filters match whole values exactly and its pages walk each row once, on
both engines and under every collation (``text_store``: also PostgreSQL databases of ICU's
``en-US`` and glibc's ``en_US.UTF-8``): a channel or a person differing in case, or by a
character a collation weighs last, is another one."""

from __future__ import annotations

import pytest

from bot.store import Store
from bot.store.audit_search import AuditFilter
from tests.store.records import audit_row

CHANNELS = ("telegram.main", "Telegram.main", "telegram.main;", "telegram.mainx", "telegram.mai")
PEOPLE = ("u1", "U1", "u-1", "u_1", "u1a")


@pytest.fixture
def store(text_store: Store) -> Store:
    return text_store


async def test_filters_and_reach_match_whole_values_only(store: Store) -> None:
    ids: dict[tuple[str, str], int] = {}
    for n, channel in enumerate(CHANNELS):
        for m, person in enumerate(PEOPLE):
            at = 1000.0 + n * 10 + m
            ids[channel, person] = await audit_row(
                store, requester=person, decided_by=person, at=at, channel=channel
            )

    async def found(flt: AuditFilter) -> set[int]:
        return {e.id for e in (await store.audit.page(flt, size=100)).entries}

    for channel in CHANNELS:
        mine = {ids[channel, p] for p in PEOPLE}
        assert await found(AuditFilter(channel=channel)) == mine, channel
        assert await found(AuditFilter(channels=frozenset({channel}))) == mine, channel
    for person in PEOPLE:
        theirs = {ids[c, person] for c in CHANNELS}
        assert await found(AuditFilter(requester=person)) == theirs, person
        assert await found(AuditFilter(approver=person)) == theirs, person
    two = frozenset({"telegram.main", "telegram.main;"})
    assert await found(AuditFilter(channels=two, requester="u1")) == {
        ids["telegram.main", "u1"],
        ids["telegram.main;", "u1"],
    }


async def test_pages_walk_each_row_once(store: Store) -> None:
    for n in range(9):
        # three rows at each moment: the walk's tie-break is exercised
        await audit_row(store, requester=PEOPLE[n % 5], decided_by="a", at=2000.0 + n // 3)
    everything = [e.id for e in (await store.audit.page(AuditFilter(), size=100)).entries]
    walked: list[int] = []
    page = await store.audit.page(AuditFilter(), size=2)
    while True:
        walked += [e.id for e in page.entries]
        if page.older is None:
            break
        page = await store.audit.page(AuditFilter(), before=page.older, size=2)
    assert walked == everything and len(set(walked)) == 9
