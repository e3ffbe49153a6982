"""Records as the daemon leaves them, written through the store's own repositories: a turn
(its inbox entry with the envelope, history, a tool call and the recorded reply), approval
requests, audit rows, notes, scheduled jobs and saved files. The retention and forgetting
tests build their databases with these. Everything goes through ``store.db`` in the SQL
both engines speak, so the same records land in SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from pathlib import Path

from bot.envelope import (
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
    envelope_to_json,
    target_to_json,
)
from bot.providers.base import ChatMessage, ToolCallRequest, Usage
from bot.store import InboxKey, InboxStatus, ReplyKind, ReplyStatus, Store, UnitOfWork
from bot.store.attachments import AttachmentKind, AttachmentRecord
from bot.store.audit import AuditEntry, Decision
from bot.store.schedules import ScheduleRow
from bot.store.tool_calls import ToolCallRecord
from bot.store.usage import UsageRecord

TELEGRAM = ChannelRef(kind="telegram", alias="main")


def envelope(
    user: str,
    conversation: str,
    message_id: str,
    *,
    text: str = "hello",
    direct: bool = False,
    thread: str | None = None,
    channel: ChannelRef = TELEGRAM,
) -> IngressEnvelope:
    return IngressEnvelope(
        channel=channel,
        message_id=message_id,
        conversation_id=conversation,
        sender=Sender(id=user),
        text=text,
        reply_target=DeliveryTarget(channel=channel, conversation_id=conversation),
        thread_id=thread,
        is_direct=direct,
        is_group=not direct,
        addressed_to_bot=True,
    )


def session_of(env: IngressEnvelope) -> str:
    key = f"{env.channel}:{env.conversation_id}"
    return key + (f":{env.thread_id}" if env.thread_id else "")


async def turn(
    store: Store,
    env: IngressEnvelope,
    *,
    status: InboxStatus = InboxStatus.DONE,
    at: float | None = None,
) -> str:
    """One answered message (or, with ``status`` ``received``, one still waiting): inbox
    entry, the question, a tool call and its result, the answer, its ``tool_calls`` row, its
    recorded reply and its ``usage`` row. Returns the turn id. ``at`` backdates every row."""
    turn_id = f"t-{env.channel}-{env.message_id}"
    key = InboxKey(channel=str(env.channel), message_id=env.message_id)
    session = session_of(env)
    await store.inbox.admit(
        key,
        envelope_id=env.envelope_id,
        session_key=session,
        payload=envelope_to_json(env),
        sender_id=env.sender.id,
    )
    if status is InboxStatus.RECEIVED:
        return turn_id
    call = ToolCallRequest(id=f"c-{turn_id}", name="calculator", arguments="{}")
    work = UnitOfWork().start_inbox(key, turn_id)
    work.append_history(
        session,
        turn_id,
        [
            ChatMessage(role="user", content=env.text),
            ChatMessage(role="assistant", tool_calls=(call,)),
            ChatMessage(role="tool", content="2", tool_call_id=call.id, name="calculator"),
            ChatMessage(role="assistant", content=f"answer to {env.text}"),
        ],
    )
    work.record_tool_calls(
        [
            ToolCallRecord(
                turn_id=turn_id,
                call_id=call.id,
                session_key=session,
                channel=str(env.channel),
                tool="calculator",
                arguments="{}",
                status="executed",
                synthetic=False,
                observation="2",
                duration_ms=1.0,
            )
        ]
    )
    await store.commit(work)
    await store.outbox.record(
        key,
        ReplyKind.ANSWER,
        reply_key=f"r-{turn_id}",
        target=target_to_json(env.reply_target),
        body=f"answer to {env.text}",
    )
    await store.commit(
        UnitOfWork()
        .settle_reply(key, ReplyKind.ANSWER, ReplyStatus.SENT, sent_ids=["1"])
        .mark_inbox(key, status)
    )
    await store.usage.record(
        [
            UsageRecord(
                at=time.time(),
                turn_id=turn_id,
                session_key=session,
                channel=str(env.channel),
                conversation_id=env.conversation_id,
                user_id=env.sender.id,
                agent="default",
                provider="default",
                model="m",
                usage=Usage(input_tokens=10, output_tokens=5),
                latency_ms=1,
                cost=None,
            )
        ]
    )
    if at is not None:
        await backdate(store, at, turn_id=turn_id, key=key)
    return turn_id


async def backdate(store: Store, at: float, *, turn_id: str, key: InboxKey) -> None:
    """Make a turn's rows as old as ``at`` (the store stamps them with the clock)."""
    db = store.db
    await db.execute("UPDATE messages SET created_at = ? WHERE turn_id = ?", (at, turn_id))
    await db.execute("UPDATE tool_calls SET created_at = ? WHERE turn_id = ?", (at, turn_id))
    await db.execute("UPDATE usage SET at = ? WHERE turn_id = ?", (at, turn_id))
    await db.execute(
        "UPDATE inbox SET received_at = ?, updated_at = ? WHERE channel = ? AND message_id = ?",
        (at, at, key.channel, key.message_id),
    )
    await db.execute(
        "UPDATE outbox SET created_at = ?, updated_at = ? WHERE channel = ? AND message_id = ?",
        (at, at, key.channel, key.message_id),
    )


async def audit_row(
    store: Store,
    *,
    requester: str,
    decided_by: str,
    at: float,
    channel: str = str(TELEGRAM),
    conversation: str = "-100",
) -> int:
    return await store.audit.append(
        AuditEntry(
            at=at,
            channel=channel,
            conversation_id=conversation,
            requester=requester,
            tool="deploy",
            summary='["version: v2"]',
            fingerprint="f" * 64,
            decision=Decision.APPROVED,
            decided_by=decided_by,
            reason="click",
        )
    )


async def approval_row(
    store: Store,
    approval_id: str,
    *,
    requester: str,
    conversation: str,
    status: str = "approved",
    decided_by: str | None = "boss",
    created_at: float = 1.0,
    channel: str = str(TELEGRAM),
) -> None:
    await store.db.execute(
        "INSERT INTO approvals (id, channel, conversation_id, session_key, requester, tool,"
        " fingerprint, summary, status, decided_by, reason, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, 'deploy', ?, '[]', ?, ?, 'click', ?, ?)",
        (
            approval_id,
            channel,
            conversation,
            f"{channel}:{conversation}",
            requester,
            "f" * 64,
            status,
            decided_by,
            created_at,
            created_at + 300,
        ),
    )


async def job(store: Store, job_id: str, *, creator: str, conversation: str) -> None:
    origin = {"channel": str(TELEGRAM), "conversation_id": conversation, "thread_id": None}
    spec = {
        "prompt": "remind me",
        "cron": "0 9 * * *",
        "origin": origin,
        "target": origin,
        "creator_id": creator,
    }
    await store.schedules.add(
        ScheduleRow(
            id=job_id,
            spec=json.dumps(spec),
            next_run_at=None,
            last_run_at=None,
            enabled=True,
            created_at=1.0,
        )
    )


async def saved_file(
    store: Store, folder: Path, env: IngressEnvelope, name: str, *, at: float
) -> Path:
    """A file the sender of ``env`` sent, saved on disk with its row."""
    path = folder / name
    path.write_bytes(b"contents of " + name.encode())
    await store.attachments.record(
        AttachmentRecord(
            id=name,
            session_key=session_of(env),
            turn_id=f"t-{env.channel}-{env.message_id}",
            channel=str(env.channel),
            conversation_id=env.conversation_id,
            user_id=env.sender.id,
            name=name,
            kind=AttachmentKind.TEXT,
            mime_type="text/plain",
            size=path.stat().st_size,
            path=str(path),
            created_at=at,
        )
    )
    return path


async def count(store: Store, sql: str, params: tuple[object, ...] = ()) -> int:
    row = await store.db.fetchone(sql, params)
    assert row is not None
    return int(row[0])


async def column(store: Store, sql: str, params: tuple[object, ...] = ()) -> list[object]:
    return [row[0] for row in await store.db.fetchall(sql, params)]
