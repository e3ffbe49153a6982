"""Forgetting a person or a conversation, on both engines: what goes, what stays with a
tombstone, what another person keeps, and the audit table's one sanctioned update."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.envelope import ChannelRef
from bot.errors import StorageIntegrityError
from bot.store import InboxStatus, Store
from bot.store.context_lines import ContextLine
from bot.store.forget import TOMBSTONE_PREFIX
from bot.store.rate_limits import SavedBucket
from bot.store.web import NewSignIn, dms_bucket, target_bucket
from tests.store.records import (
    TELEGRAM,
    approval_row,
    audit_row,
    column,
    count,
    envelope,
    job,
    saved_file,
    turn,
)

ANN, BOB = "1001", "2002"
GROUP, ANN_DM = "-100", "1001"
DISCORD = ChannelRef(kind="discord", alias="main")
OTHER = str(DISCORD)


async def people(store: Store, files: Path) -> dict[str, Path]:
    """Ann and Bob in a group, Ann in her DM (two turns, one still waiting), Ann on another
    channel; approvals, audit rows, notes, jobs, files and buckets of both."""
    ann_group = envelope(ANN, GROUP, "1", text="ann in the group")
    bob_group = envelope(BOB, GROUP, "2", text="bob in the group")
    ann_dm = envelope(ANN, ANN_DM, "3", text="ann in private", direct=True)
    await turn(store, ann_group)
    await turn(store, bob_group)
    await turn(store, ann_dm)
    await turn(
        store,
        envelope(ANN, ANN_DM, "4", text="still waiting", direct=True),
        status=InboxStatus.RECEIVED,
    )
    other = envelope(ANN, "G9", "5", text="ann elsewhere", channel=DISCORD)
    await turn(store, other)
    await approval_row(store, "ap-ann", requester=ANN, conversation=GROUP, decided_by=BOB)
    await approval_row(store, "ap-bob", requester=BOB, conversation=GROUP, decided_by=ANN)
    await store.db.execute("UPDATE approvals SET decided_by_name = 'Ann' WHERE id = 'ap-bob'")
    await approval_row(
        store, "ap-wait", requester=ANN, conversation=GROUP, status="pending", decided_by=None
    )
    await audit_row(store, requester=ANN, decided_by=BOB, at=10.0)
    await audit_row(store, requester=BOB, decided_by=ANN, at=11.0)
    await audit_row(store, requester=BOB, decided_by="runtime", at=12.0)
    await audit_row(store, requester=ANN, decided_by="runtime", at=13.0, channel=OTHER)
    await store.memory.add(
        scope_key=f"conversation:{TELEGRAM}:{GROUP}", content="ann's", created_by=ANN
    )
    await store.memory.add(
        scope_key=f"conversation:{TELEGRAM}:{GROUP}", content="bob's", created_by=BOB
    )
    await store.memory.add(scope_key=f"conversation:{TELEGRAM}:{ANN_DM}", content="dm note")
    await store.memory.add(
        scope_key=f"conversation:{OTHER}:G9", content="elsewhere", created_by=ANN
    )
    await job(store, "job-ann", creator=ANN, conversation=GROUP)
    await job(store, "job-bob", creator=BOB, conversation=GROUP)
    await store.rate_limits.save(
        [
            SavedBucket(bucket=f"user:{TELEGRAM}:{ANN}", tokens=0.5, updated_at=1.0),
            SavedBucket(bucket=f"user:{TELEGRAM}:{BOB}", tokens=0.5, updated_at=1.0),
        ]
    )
    # the web console: Ann and Bob signed in, a link sent to Ann, Ann's sign-in counter
    now = time.time()
    for id_hash, identity in (("s-ann", f"telegram:{ANN}"), ("s-bob", f"telegram:{BOB}")):
        await store.web.open_session(id_hash, identity, now=now, expires_at=now + 3600)
    await store.web.add_sign_in(
        NewSignIn(
            token_hash="t-ann",
            code_hash=None,
            identity=f"telegram:{ANN}",
            created_at=now,
            expires_at=now + 600,
        )
    )
    await store.web.count(target_bucket(f"telegram:{ANN}", "10.0.0.1"), now=now, window_s=60)
    await store.web.count(dms_bucket(f"telegram:{ANN}"), now=now, window_s=3600)
    await store.web.count(target_bucket(f"telegram:{ANN}1", "10.0.0.1"), now=now, window_s=60)
    await store.web.remember_clients(f"telegram:{ANN}", ["addr:x", "browser:y"], now)
    # group context: what Ann and Bob said in the group without asking the bot, and Ann's
    # words on the other channel
    for channel, conversation, message, sender in (
        (str(TELEGRAM), GROUP, "c1", ANN),
        (str(TELEGRAM), GROUP, "c2", BOB),
        (OTHER, "G9", "c3", ANN),
    ):
        line = ContextLine(
            channel=channel,
            conversation_id=conversation,
            message_id=message,
            sender_id=sender,
            text=f"{sender} chatting",
            at=now,
        )
        await store.context_lines.keep(line, window=10, keep_s=3600)
    # the names the console shows: Ann's goes with her, Bob's and a longer id's stay
    for who in (f"telegram:{ANN}", f"telegram:{BOB}", f"telegram:{ANN}1"):
        await store.display_names.remember(who, f"name of {who}", now)
    # the titles the console shows: the group's and a thread of it, Ann's DM (were it
    # titled), and a longer id's, which stays with every other place
    for where in (
        f"{TELEGRAM}:{GROUP}",
        f"{TELEGRAM}:{GROUP}:7",
        f"{TELEGRAM}:{ANN_DM}",
        f"{TELEGRAM}:{GROUP}0",
    ):
        await store.conversation_titles.remember(where, f"title of {where}", now)
    return {
        "ann": await saved_file(store, files, ann_group, "ann.txt", at=1.0),
        "bob": await saved_file(store, files, bob_group, "bob.txt", at=1.0),
    }


async def test_forgetting_a_user_on_a_channel(store: Store, tmp_path: Path) -> None:
    paths = await people(store, tmp_path)
    report = await store.forget.user(ANN, channel=str(TELEGRAM))

    stone = report.tombstone
    assert stone.startswith(TOMBSTONE_PREFIX)
    assert report.in_flight == 1
    assert report.direct_conversations == [(str(TELEGRAM), ANN_DM)]
    assert report.removed == {
        "messages": 8,  # her group turn and her DM session, four messages each
        "tool_calls": 2,
        "outbox": 2,
        "inbox": 2,
        "approvals": 1,
        "memory": 2,  # her group note and the DM's
        "schedules": 1,
        "usage": 2,
        "budget_notices": 0,
        "rate_limit_buckets": 1,
        "context_lines": 1,
        "web_sessions": 1,
        "web_sign_ins": 1,
        "web_rate_counters": 2,
        "web_known_clients": 2,
        "display_names": 1,
        "conversation_titles": 1,  # her DM's
        "attachments": 1,
    }
    assert report.tombstoned == {"approvals": 1, "audit": 2, "grants": 0}

    # Bob's records are whole
    history = await store.history.load(f"{TELEGRAM}:{GROUP}")
    assert [m.content for m in history if m.role == "user"] == ["bob in the group"]
    assert await store.history.load(f"{TELEGRAM}:{ANN_DM}") == []
    assert await column(store, "SELECT sender_id FROM inbox ORDER BY id") == [BOB, ANN, ANN]
    assert await column(store, "SELECT id FROM approvals ORDER BY id") == ["ap-bob", "ap-wait"]
    assert await column(store, "SELECT decided_by FROM approvals WHERE id = 'ap-bob'") == [stone]
    named = await column(store, "SELECT decided_by_name FROM approvals WHERE id = 'ap-bob'")
    assert named == [None]
    assert await column(store, "SELECT content FROM memory ORDER BY id") == ["bob's", "elsewhere"]
    assert await column(store, "SELECT id FROM schedules") == ["job-bob"]
    buckets = await column(store, "SELECT bucket FROM rate_limit_buckets")
    assert buckets == [f"user:{TELEGRAM}:{BOB}"]
    assert not paths["ann"].exists() and paths["bob"].exists()
    # her console access ended, his did not
    assert await column(store, "SELECT id_hash FROM web_sessions") == ["s-bob"]
    # her group context lines went, on this channel only
    assert await column(store, "SELECT message_id FROM context_lines ORDER BY id") == ["c2", "c3"]
    assert await store.web.claim_link("t-ann", time.time()) is None
    # the audit trail keeps every row; her id is gone from this channel's rows only
    assert await column(store, "SELECT requester || '/' || decided_by FROM audit ORDER BY id") == [
        f"{stone}/{BOB}",
        f"{BOB}/{stone}",
        f"{BOB}/runtime",
        f"{ANN}/runtime",
    ]
    # what she sent on the other channel stays
    assert await count(store, "SELECT COUNT(*) FROM inbox WHERE channel = ?", (OTHER,)) == 1


async def test_forgetting_a_user_everywhere(store: Store, tmp_path: Path) -> None:
    await people(store, tmp_path)
    report = await store.forget.user(ANN)
    assert report.removed["inbox"] == 3
    assert report.tombstoned["audit"] == 3
    assert await count(store, "SELECT COUNT(*) FROM audit WHERE requester = ?", (ANN,)) == 0
    assert await column(store, "SELECT content FROM memory ORDER BY id") == ["bob's"]
    again = await store.forget.user(ANN)
    assert sum(again.removed.values()) == 0 and sum(again.tombstoned.values()) == 0


async def test_forgetting_a_conversation(store: Store, tmp_path: Path) -> None:
    paths = await people(store, tmp_path)
    report = await store.forget.conversation(str(TELEGRAM), GROUP)
    assert report.removed == {
        "messages": 8,
        "tool_calls": 2,
        "outbox": 2,
        "inbox": 2,
        "approvals": 2,  # the pending one stays
        "memory": 2,
        "schedules": 2,
        "usage": 2,
        "budget_notices": 0,
        "rate_limit_buckets": 0,
        "context_lines": 2,
        "conversation_titles": 2,  # the group's and its thread's
        "attachments": 2,
    }
    left = await store.conversation_titles.of(
        [f"{TELEGRAM}:{GROUP}", f"{TELEGRAM}:{ANN_DM}", f"{TELEGRAM}:{GROUP}0"]
    )
    assert set(left) == {f"{TELEGRAM}:{ANN_DM}", f"{TELEGRAM}:{GROUP}0"}
    assert not paths["ann"].exists() and not paths["bob"].exists()
    assert await store.history.load(f"{TELEGRAM}:{ANN_DM}") != []
    assert await count(store, "SELECT COUNT(*) FROM audit") == 4
    assert (await column(store, "SELECT requester FROM audit ORDER BY id"))[:2] == [ANN, BOB]


async def test_the_channels_a_conversation_may_be_on(store: Store, tmp_path: Path) -> None:
    assert await store.forget.channels() == set()
    await people(store, tmp_path)
    assert await store.forget.channels() == {str(TELEGRAM), OTHER}
    await store.forget.conversation(OTHER, "G9")
    assert await store.forget.channels() == {str(TELEGRAM)}


async def test_audit_rows_refuse_every_other_change(store: Store) -> None:
    await audit_row(store, requester=ANN, decided_by="runtime", at=10.0)
    refused = [
        "UPDATE audit SET summary = 'edited'",
        "UPDATE audit SET requester = 'someone else'",
        "UPDATE audit SET requester = 'forgotten:x', decision = 'denied'",
        "UPDATE audit SET decided_by = 'forgotten:x'",  # the runtime is nobody to forget
        "DELETE FROM audit",
    ]
    for sql in refused:
        with pytest.raises(StorageIntegrityError, match="append-only"):
            await store.db.execute(sql)
    await store.db.execute("UPDATE audit SET requester = 'forgotten:ab12'")
    with pytest.raises(StorageIntegrityError, match="append-only"):
        await store.db.execute("UPDATE audit SET requester = 'forgotten:cd34'")
    # a cutoff in the marks allows deleting older rows, never one younger than 30 days
    await store.db.execute(
        "INSERT INTO retention_marks (name, value) VALUES ('audit_delete_before', 1e12)"
    )
    await store.db.execute(
        "INSERT INTO audit (at, channel, conversation_id, requester, tool, summary,"
        " fingerprint, decision, decided_by) VALUES (?, 'c', 'c',"
        " 'r', 't', 's', 'f', 'approved', 'runtime')",
        (time.time(),),
    )
    with pytest.raises(StorageIntegrityError, match="append-only"):
        await store.db.execute("DELETE FROM audit")
    await store.db.execute("DELETE FROM audit WHERE at = 10.0")
    assert await count(store, "SELECT COUNT(*) FROM audit") == 1
