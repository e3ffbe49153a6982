"""The console's turn queries: sessions by latest activity, a session's turns newest first
with the tool calls of each, paging, and a reader's reach applied in the query (another
channel's session reads as empty, however its key is spelled). On both engines and, through
``text_store``, on PostgreSQL databases of ICU's ``en-US`` and glibc's ``en_US.UTF-8``
collations, where ``;`` sorts before ``:`` (a channel written as a text range found
nothing there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.envelope import ChannelRef
from bot.store import Store
from bot.store.turns import sessions_query, turns_query
from tests.store.records import envelope, session_of, turn

SLACK = ChannelRef(kind="slack", alias="work")


@pytest.fixture
def store(text_store: Store) -> Store:
    return text_store


async def test_a_sessions_turns_come_newest_first_with_their_tool_calls(store: Store) -> None:
    first = envelope("u1", "c1", "m1", text="what is 1+1")
    ids = [await turn(store, first, at=1000.0)]
    for n in range(2, 26):
        ids.append(await turn(store, envelope("u1", "c1", f"m{n}", text=f"q{n}"), at=1000.0 + n))
    key = session_of(first)
    page = await store.turns.for_session(key, None, limit=20)
    assert [t.turn_id for t in page.turns] == ids[::-1][:20]
    assert page.older is not None
    rest = await store.turns.for_session(key, None, before=page.older, limit=20)
    assert [t.turn_id for t in rest.turns] == ids[::-1][20:]
    assert rest.older is None
    oldest = rest.turns[-1]
    assert (oldest.sender_id, oldest.text, oldest.status) == ("u1", "what is 1+1", "done")
    assert [(c.tool, c.status, c.observation) for c in oldest.tool_calls] == [
        ("calculator", "executed", "2")
    ]


async def test_sessions_are_listed_by_latest_activity_within_reach(store: Store) -> None:
    await turn(store, envelope("u1", "c1", "m1"))
    await turn(store, envelope("u2", "c2", "m2", channel=SLACK))
    await turn(store, envelope("u3", "c3", "m3"))
    everyone = await store.turns.sessions(None)
    assert [s.session_key for s in everyone] == [
        "telegram.main:c3",
        "slack.work:c2",
        "telegram.main:c1",
    ]
    mine = await store.turns.sessions(frozenset({"slack.work"}))
    assert [(s.session_key, s.channel) for s in mine] == [("slack.work:c2", "slack.work")]
    # a channel filter outside the reach finds nothing; an empty reach reaches nothing
    assert await store.turns.sessions(frozenset({"slack.work"}), channel="telegram.main") == []
    assert await store.turns.sessions(frozenset()) == []
    # paging on (updated_at, key)
    first = await store.turns.sessions(None, limit=2)
    last = first[-1]
    more = await store.turns.sessions(None, before=(last.updated_at, last.session_key))
    assert [s.session_key for s in first + more] == [s.session_key for s in everyone]


async def test_a_session_out_of_reach_reads_as_empty(store: Store) -> None:
    await turn(store, envelope("u1", "c1", "m1"))
    reach = frozenset({"slack.work"})
    assert (await store.turns.for_session("telegram.main:c1", reach)).turns == ()
    # a key that only starts like a channel in reach is still another channel's
    assert (await store.turns.for_session("slack.workshop:c1", reach)).turns == ()
    assert len((await store.turns.for_session("telegram.main:c1", None)).turns) == 1


async def test_the_turn_queries_use_their_indexes(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        reach = frozenset({"slack.work", "telegram.main"})
        for sql, params in (
            sessions_query(reach, before=(5.0, "k")),
            turns_query("telegram.main:c1", reach, before=10),
        ):
            plan = [
                str(r["detail"])
                for r in await store.db.fetchall(f"EXPLAIN QUERY PLAN {sql}", params)
            ]
            assert any(" USING INDEX " in s or " USING COVERING INDEX " in s for s in plan), plan
            assert not any("TEMP B-TREE" in step for step in plan), plan


CHANNEL_KEYS = (
    "telegram.main:c1",
    "telegram.main:C2",
    "telegram.main:c3:thread",
    "telegram.main;c4",  # what a range up to "telegram.main;" let in or kept out
    "telegram.mainx:c5",
    "telegram.main-2:c6",
    "Telegram.main:c7",
    "telegram.mai:c8",
    "slack.work:c9",
)


async def test_a_channel_and_a_reach_find_exactly_the_keys_that_start_with_it(
    store: Store,
) -> None:
    for n, key in enumerate(CHANNEL_KEYS):
        channel, _, conversation = key.partition(":")
        kind, _, alias = channel.partition(".")
        env = envelope("u1", conversation, f"m{n}", channel=ChannelRef(kind=kind, alias=alias))
        await turn(store, env, at=1000.0 + n)
    main = ["telegram.main:c3:thread", "telegram.main:C2", "telegram.main:c1"]
    found = await store.turns.sessions(None, channel="telegram.main")
    assert [s.session_key for s in found] == main
    reach = frozenset({"telegram.main", "slack.work"})
    assert [s.session_key for s in await store.turns.sessions(reach)] == [
        "slack.work:c9",
        *main,
    ]
    assert [s.session_key for s in await store.turns.sessions(reach, channel="slack.work")] == [
        "slack.work:c9"
    ]
    page = await store.turns.for_session("telegram.main:c1", frozenset({"telegram.main"}))
    assert [t.session_key for t in page.turns] == ["telegram.main:c1"]
    for other in ("telegram.main;c4", "telegram.mainx:c5", "Telegram.main:c7"):
        assert (await store.turns.for_session(other, frozenset({"telegram.main"}))).turns == ()


async def test_sessions_of_the_same_moment_page_through_once_each(store: Store) -> None:
    # keys that sort differently under each collation, all active at the same moment: the
    # pages still give each session once, in the order of the first page's query
    keys = [f"telegram.main:{c}" for c in ("a", "B", "_c", "-d", "e;", "E:", "f.g", "ä", "z")]
    for n, key in enumerate(keys):
        env = envelope("u1", key.partition(":")[2], f"m{n}")
        await turn(store, env, at=2000.0)
    everyone = [s.session_key for s in await store.turns.sessions(None, limit=100)]
    assert sorted(everyone) == sorted(keys)
    walked: list[str] = []
    before: tuple[float, str] | None = None
    while True:
        page = await store.turns.sessions(None, before=before, limit=2)
        if not page:
            break
        walked += [s.session_key for s in page]
        before = (page[-1].updated_at, page[-1].session_key)
    assert walked == everyone
