"""What the console reads of a tool call and a person, on both engines: a call's outcome
fields (migration 0019) round-trip and a row without them reads as not recorded; display
names are kept by identity, read back in bulk, forgotten with the person and pruned by age;
a session's turns carry the replies sent for them."""

from __future__ import annotations

import time

from bot.store import Store, ToolCallRecord
from bot.store.audit import Decision
from bot.store.console_summary import summary
from tests.store.records import envelope, session_of, turn


def _call(turn_id: str, **fields: object) -> ToolCallRecord:
    base: dict[str, object] = {
        "turn_id": turn_id,
        "call_id": "c1",
        "session_key": "telegram.main:1001",
        "channel": "telegram.main",
        "tool": "shell",
        "arguments": "{}",
        "status": "executed",
        "synthetic": False,
        "observation": "exit 1",
        "duration_ms": 3.0,
    }
    return ToolCallRecord(**{**base, **fields})  # type: ignore[arg-type]


async def test_a_calls_outcome_fields_round_trip(store: Store) -> None:
    await store.tool_calls.record(
        _call(
            "t1",
            failed=True,
            failure="exit 1",
            reason="none",
            decision=Decision.APPROVED,
            decided_by="2002",
            decision_reason="",
            grant_id=7,
            fingerprint="f" * 64,
        )
    )
    await store.tool_calls.record(_call("t2"))
    (recorded,) = await store.tool_calls.for_turn("t1")
    assert recorded.failed is True and recorded.failure == "exit 1"
    assert recorded.reason == "none"
    assert recorded.decision == "approved" and recorded.decided_by == "2002"
    assert recorded.grant_id == 7 and recorded.fingerprint == "f" * 64
    (old,) = await store.tool_calls.for_turn("t2")
    assert old.failed is None and old.reason is None and old.decision is None
    assert old.grant_id is None


async def test_display_names_are_kept_forgotten_and_pruned(store: Store) -> None:
    names = store.display_names
    now = time.time()
    await names.remember("telegram:1001", "Alice", now - 100)
    await names.remember("telegram:1001", "Alice \u202eB", now)  # the latest name wins
    await names.remember("slack:1001", "Slack Alice", now)
    await names.remember("telegram:10011", "Not Alice", now)
    await names.remember("telegram:old", "Gone", now - 10_000)
    found = await names.of(["telegram:1001", "telegram:nobody", "slack:1001"])
    assert found == {"telegram:1001": "Alice \u202eB", "slack:1001": "Slack Alice"}
    assert await store.retention.prune_display_names(now - 1000) == 1
    assert await names.of(["telegram:old"]) == {}
    report = await store.forget.user("1001", channel="telegram.main")
    assert report.removed["display_names"] == 1
    left = await names.of(["telegram:1001", "slack:1001", "telegram:10011"])
    assert left == {"slack:1001": "Slack Alice", "telegram:10011": "Not Alice"}
    report = await store.forget.user("1001")
    assert report.removed["display_names"] == 1
    assert await names.of(["slack:1001"]) == {}


async def test_a_sessions_turns_carry_their_replies(store: Store) -> None:
    env = envelope("1001", "1001", "m1", text="hello", direct=True)
    await turn(store, env)
    page = await store.turns.for_session(session_of(env), None)
    (found,) = page.turns
    assert [(r.kind, r.body, r.status) for r in found.replies] == [
        ("answer", "answer to hello", "sent")
    ]


async def test_a_persons_sessions_and_the_health_summary(store: Store) -> None:
    await turn(store, envelope("1001", "1001", "m1", text="mine", direct=True))
    await turn(store, envelope("2002", "-100", "m2", text="group"))
    await turn(store, envelope("1001", "-100", "m3", text="mine too"))
    found = await store.turns.sessions_of_sender("1001", ["telegram.main"])
    assert sorted(s.session_key for s in found) == ["telegram.main:-100", "telegram.main:1001"]
    assert await store.turns.sessions_of_sender("1001", []) == []
    page = await store.turns.for_session("telegram.main:-100", None, sender_id="1001")
    assert [t.text for t in page.turns] == ["mine too"]
    await store.tool_calls.record(_call("t9", failed=True, reason="none", created_at=time.time()))
    figures = await summary(store.db, since=0.0, errors_since=time.time() - 3600, channels=None)
    assert figures.failed_calls == {"telegram.main": 1} and figures.pending == 0
    hidden = await summary(store.db, since=0.0, errors_since=0.0, channels=frozenset({"slack.ops"}))
    assert hidden.failed_calls == {} and hidden.decisions == 0


async def test_audit_rows_and_requests_keep_the_call_they_are_about(store: Store) -> None:
    """An audit row names its call by turn and call id (migration 0020), and so does an
    approval request, for the rows its answers write; a row without them reads as None (not
    recorded), and the turn's calls are found by its id."""
    from bot.store.approvals import ApprovalRecord
    from bot.store.audit import AuditEntry

    base = {
        "channel": "telegram.main",
        "conversation_id": "1001",
        "requester": "1001",
        "tool": "shell",
        "summary": "[]",
        "fingerprint": "f" * 64,
        "decision": Decision.DENIED,
        "decided_by": "2002",
    }
    now = time.time()
    await store.audit.append(AuditEntry(at=now, turn_id="t1", call_id="call_7", **base))  # type: ignore[arg-type]
    await store.audit.append(AuditEntry(at=now + 1, **base))  # type: ignore[arg-type]
    new, old = await store.audit.since(now - 1)
    assert (new.turn_id, new.call_id) == ("t1", "call_7")
    assert (old.turn_id, old.call_id) == (None, None)
    await store.approvals.create(
        ApprovalRecord(
            id="a1",
            channel="telegram.main",
            conversation_id="1001",
            thread_id=None,
            session_key="telegram.main:1001",
            requester="1001",
            requester_name="",
            tool="shell",
            fingerprint="f" * 64,
            summary=(),
            ask_reason="",
            created_at=now,
            expires_at=now + 60,
            turn_id="t1",
            call_id="call_7",
        )
    )
    record = await store.approvals.get("a1")
    assert record is not None and (record.turn_id, record.call_id) == ("t1", "call_7")
    await store.tool_calls.record(_call("t1", call_id="call_7"))
    await store.tool_calls.record(_call("t3"))
    assert [(c.turn_id, c.call_id) for c in await store.tool_calls.for_turns(["t1", "t2"])] == [
        ("t1", "call_7")
    ]


async def test_conversation_titles_are_kept_read_and_pruned(store: Store) -> None:
    """Titles by place (a conversation, a thread of it), the latest winning, read in bulk
    and pruned by age; forgetting is in tests/store/test_forget.py."""
    titles = store.conversation_titles
    now = time.time()
    await titles.remember("slack.work:C1", "general", now - 100)
    await titles.remember("slack.work:C1", "general \u202eB", now)  # renamed: the latest wins
    await titles.remember("discord.main:42:77", "release thread", now)
    await titles.remember("telegram.main:-100", "old group", now - 10_000)
    found = await titles.of(["slack.work:C1", "discord.main:42:77", "slack.work:C2"])
    assert found == {"slack.work:C1": "general \u202eB", "discord.main:42:77": "release thread"}
    await titles.remember("slack.work:C3", "x" * 500, now)  # cut, not refused
    assert len((await titles.of(["slack.work:C3"]))["slack.work:C3"]) == 200
    assert await store.retention.prune_conversation_titles(now - 1000) == 1
    assert await titles.of(["telegram.main:-100"]) == {}
