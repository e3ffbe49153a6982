"""The console's audit queries on a real SQLite file of 100,000 rows: every filter and both
directions of the keyset walk go through an index in the trail's order (the engine's own
plan, never a sort of the matching rows), each row is read once, and a reader's reach is
part of the query."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.store import Store
from bot.store.audit import AuditPage
from bot.store.audit_search import AuditCursor, AuditFilter, page_query
from bot.store.statements import Write

ROWS = 100_000
START = 1_700_000_000.0
CHANNELS = ("telegram.main", "slack.work", "discord.guild")
TOOLS = ("shell", "write_file", "send_message", "http_fetch", "schedule_job")
DECISIONS = ("approved", "denied", "policy_allowed", "expired", "always")
INSERT = (
    "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary, fingerprint,"
    " decision, decided_by, reason, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    at: float
    channel: str
    requester: str
    tool: str
    decision: str
    decided_by: str


def generated() -> list[Row]:
    """The rows, in insertion order (ids from 1). Two rows share each ``at``, so the walk's
    tie-break on ``id`` is exercised throughout."""
    rnd = random.Random(26)
    return [
        Row(
            id=i + 1,
            at=START + (i // 2) * 7.5,
            channel=rnd.choice(CHANNELS),
            requester=f"u{rnd.randrange(40)}",
            tool=rnd.choice(TOOLS),
            decision=rnd.choice(DECISIONS),
            decided_by=rnd.choice(("runtime", "a1", "a2", "a3")),
        )
        for i in range(ROWS)
    ]


@pytest.fixture(scope="module")
def trail(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Row]]]:
    rows = generated()
    path = tmp_path_factory.mktemp("audit") / "hatchway.db"

    async def build() -> None:
        async with await Store.open(path) as store:
            values = [
                (r.at, r.channel, "c1", r.requester, r.tool, "[]", "fp", r.decision,
                 r.decided_by, "", 0.0)
                for r in rows
            ]  # fmt: skip
            await store.db.commit([Write(INSERT, values)])

    asyncio.run(build())
    yield path, rows


def matching(rows: list[Row], flt: AuditFilter) -> list[int]:
    """The oracle: the ids ``flt`` keeps, newest first."""
    kept = [
        r
        for r in rows
        if (not flt.tool or r.tool == flt.tool)
        and (not flt.requester or r.requester == flt.requester)
        and (not flt.approver or r.decided_by == flt.approver)
        and (not flt.decision or r.decision == flt.decision)
        and (not flt.channel or r.channel == flt.channel)
        and (flt.since is None or r.at >= flt.since)
        and (flt.until is None or r.at < flt.until)
        and (flt.channels is None or r.channel in flt.channels)
    ]
    return [r.id for r in sorted(kept, key=lambda r: (r.at, r.id), reverse=True)]


MIDDLE = AuditCursor(at=START + 25_000 * 7.5, id=50_001)
FILTERS = {
    "none": AuditFilter(),
    "tool": AuditFilter(tool="shell"),
    "requester": AuditFilter(requester="u7"),
    "approver": AuditFilter(approver="a2"),
    "decision": AuditFilter(decision="denied"),
    "channel": AuditFilter(channel="slack.work"),
    "dates": AuditFilter(since=START + 100_000.0, until=START + 300_000.0),
    "one channel in reach": AuditFilter(channels=frozenset({"slack.work"})),
    "two channels in reach": AuditFilter(channels=frozenset({"slack.work", "discord.guild"})),
    "everything": AuditFilter(
        tool="shell",
        requester="u7",
        approver="a2",
        decision="denied",
        channel="slack.work",
        since=START,
        until=START + 400_000.0,
        channels=frozenset({"slack.work", "telegram.main"}),
    ),
}


@pytest.mark.parametrize("direction", ["first", "before", "after"])
@pytest.mark.parametrize("name", list(FILTERS))
async def test_every_page_walks_an_index_in_order(
    trail: tuple[Path, list[Row]], name: str, direction: str
) -> None:
    path, _rows = trail
    cursor = {"first": {}, "before": {"before": MIDDLE}, "after": {"after": MIDDLE}}[direction]
    sql, params = page_query(FILTERS[name], limit=51, **cursor)
    async with await Store.open(path) as store:
        plan = [
            str(r["detail"]) for r in await store.db.fetchall(f"EXPLAIN QUERY PLAN {sql}", params)
        ]
    assert len(plan) == 1, plan
    assert " USING INDEX audit_" in plan[0] or " USING COVERING INDEX audit_" in plan[0], plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


async def test_a_page_is_the_newest_rows_and_older_continues_where_it_ended(
    trail: tuple[Path, list[Row]],
) -> None:
    path, rows = trail
    expected = matching(rows, AuditFilter())
    async with await Store.open(path) as store:
        first = await store.audit.page(AuditFilter())
        assert [e.id for e in first.entries] == expected[:50]
        assert first.newer is None and first.older is not None
        second = await store.audit.page(AuditFilter(), before=first.older)
        assert [e.id for e in second.entries] == expected[50:100]
        assert second.newer is not None
        back = await store.audit.page(AuditFilter(), after=second.newer)
        assert back == first


@pytest.mark.parametrize(
    "flt",
    [
        AuditFilter(tool="http_fetch", channels=frozenset({"telegram.main", "discord.guild"})),
        AuditFilter(decision="always", since=START + 50_000.0),
    ],
    ids=["tool in a two-channel reach", "decision since a date"],
)
async def test_walking_older_then_newer_reads_each_row_once(
    trail: tuple[Path, list[Row]], flt: AuditFilter
) -> None:
    path, rows = trail
    expected = matching(rows, flt)
    assert len(expected) > 2000  # many pages of 500
    async with await Store.open(path) as store:
        pages: list[AuditPage] = [await store.audit.page(flt, size=500)]
        while pages[-1].older is not None:
            pages.append(await store.audit.page(flt, before=pages[-1].older, size=500))
        assert [e.id for p in pages for e in p.entries] == expected
        # and back up: each newer page is the one before it
        at = pages[-1]
        for previous in reversed(pages[:-1]):
            assert at.newer is not None
            at = await store.audit.page(flt, after=at.newer, size=500)
            assert at.entries == previous.entries
        assert at.newer is None


async def test_the_export_reads_every_matching_row_newest_first(
    trail: tuple[Path, list[Row]],
) -> None:
    path, rows = trail
    flt = AuditFilter(requester="u3")
    async with await Store.open(path) as store:
        ids = [e.id async for e in store.audit.matching(flt, batch=300)]
    assert ids == matching(rows, flt)


async def test_a_reader_sees_only_the_channels_in_reach(trail: tuple[Path, list[Row]]) -> None:
    path, _rows = trail
    reach = frozenset({"slack.work"})
    async with await Store.open(path) as store:
        page = await store.audit.page(AuditFilter(channels=reach), size=1000)
        assert {e.channel for e in page.entries} == {"slack.work"}
        # asking for another channel's rows by name finds nothing
        other = await store.audit.page(AuditFilter(channel="telegram.main", channels=reach))
        assert other.entries == () and other.older is None
        # a reach of no channel reaches no row
        nothing = await store.audit.page(AuditFilter(channels=frozenset()))
        assert nothing.entries == ()


@pytest.mark.parametrize("text", ["", "12", "abc_1", "1.5_x", "nan_3", "inf_3", "1_2_3"])
def test_a_cursor_that_names_no_position_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        AuditCursor.parse(text)


def test_a_cursor_reads_back_as_itself() -> None:
    cursor = AuditCursor(at=START + 0.1 + 1e-7, id=77)
    assert AuditCursor.parse(cursor.token()) == cursor
