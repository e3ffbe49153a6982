"""The console's turn queries on a real SQLite file: sessions by latest activity, a session's
turns newest first with the tool calls of each, paging, and a reader's reach applied in the
query (another channel's session reads as empty, however its key is spelled)."""

from __future__ import annotations

from pathlib import Path

from bot.envelope import ChannelRef
from bot.store import Store
from bot.store.turns import sessions_query, turns_query
from tests.store.records import envelope, session_of, turn

SLACK = ChannelRef(kind="slack", alias="work")


async def test_a_sessions_turns_come_newest_first_with_their_tool_calls(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
        first = envelope("u1", "c1", "m1", text="what is 1+1")
        ids = [await turn(store, first, at=1000.0)]
        for n in range(2, 26):
            ids.append(
                await turn(store, envelope("u1", "c1", f"m{n}", text=f"q{n}"), at=1000.0 + n)
            )
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


async def test_sessions_are_listed_by_latest_activity_within_reach(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
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


async def test_a_session_out_of_reach_reads_as_empty(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "h.db") as store:
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
